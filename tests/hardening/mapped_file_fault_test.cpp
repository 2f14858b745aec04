// Item 5 of issue #15: a model file truncated while it is mapped. Reading its lost pages
// raises SIGBUS; with the CLI's handler installed the process says which file and exits 1.
// Each case runs in a forked child, which the fault ends.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include "gguf/mapped_file.hpp"
#include "random_llama.hpp"

namespace {

struct ChildResult {
  int status = -1;  // exit status, or 128 + the signal that ended it
  std::string err;
};

// Runs `body` in a child whose stderr is captured; the body must end the process.
template <class Body>
ChildResult in_child(Body body) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    body();
    _exit(99);  // the body did not end the process
  }
  close(pipe_fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0) r.err.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return r;
}

}  // namespace

TEST_CASE("a mapped model file truncated while in use is named, exit 1") {
  const std::string path = specd::test::temp_dir("mapped-fault") + "/model.gguf";
  std::ofstream(path, std::ios::binary) << std::string(3 * 65536, 'x');
  const ChildResult r = in_child([&] {
    specd::install_mapped_file_fault_handler();
    specd::MappedFile file = specd::MappedFile::open(path);
    if (truncate(path.c_str(), 0) != 0) _exit(98);
    volatile uint8_t byte = file.data()[2 * 65536];  // its page is gone: SIGBUS
    (void)byte;
  });
  INFO("stderr: " << r.err);
  CHECK(r.status == 1);
  CHECK(r.err == "specd: error: model file " + path + " was truncated or changed while in use\n");
}

TEST_CASE("a SIGBUS outside any mapped file keeps its default action") {
  const ChildResult r = in_child([] {
    specd::install_mapped_file_fault_handler();
    std::raise(SIGBUS);
  });
  CHECK(r.status == 128 + SIGBUS);
  CHECK(r.err.empty());
}
