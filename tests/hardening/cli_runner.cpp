#include "cli_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <stdexcept>

namespace specd::test {
namespace {

void must(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("run_program: ") + what + " failed");
}

}  // namespace

RunningProgram start_program(const std::vector<std::string>& argv,
                             const std::vector<int>& blocked_signals) {
  int in[2], out[2], err[2];
  must(pipe(in) == 0 && pipe(out) == 0 && pipe(err) == 0, "pipe");
  // Blocked before the fork, so that the child never runs a moment without the mask.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int signal : blocked_signals) sigaddset(&mask, signal);
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  pid_t pid = fork();
  if (pid != 0) sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  must(pid >= 0, "fork");
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  return {pid, in[1], out[0], err[0]};
}

CliResult finish_program(RunningProgram& program, const std::string& stdin_text) {
  // A child that exits without reading its input must not kill us with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  int in_fd = program.in;
  if (stdin_text.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  CliResult result;
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd fds[3] = {{program.out, POLLIN, 0}, {program.err, POLLIN, 0}, {in_fd, POLLOUT, 0}};
    if (poll(fds, in_fd >= 0 ? 3 : 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      } else {
        (i == 0 ? out_open : err_open) = false;
      }
    }
    if (in_fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write(in_fd, stdin_text.data() + written, stdin_text.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 || written == stdin_text.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(program.out);
  close(program.err);
  int wstatus = 0;
  while (waitpid(program.pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  program = {};
  result.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return result;
}

CliResult run_program(const std::vector<std::string>& argv, const std::string& stdin_text) {
  RunningProgram program = start_program(argv);
  return finish_program(program, stdin_text);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace specd::test
