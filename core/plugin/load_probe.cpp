#include "plugin/load_probe.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>

#include "plugin/host_services.hpp"
#include "specd/entry.h"

namespace specd {
namespace {

// The child: loads the library as the host would and writes one byte when all of its code
// has returned. Never returns.
[[noreturn]] void probe_child(const std::string& open_path, int report_fd, pid_t parent) {
  // Dies with the host (a host killed while it waits must not leave a hung child behind),
  // and takes signals even where the host blocks them for its own watcher thread.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(4);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null_fd = ::open("/dev/null", O_WRONLY);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
  }
  void* handle = ::dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  using EntryFn = const specd_plugin_descriptor* (*)(uint32_t, uint32_t);
  auto entry =
      handle ? reinterpret_cast<EntryFn>(::dlsym(handle, SPECD_PLUGIN_ENTRY_SYMBOL)) : nullptr;
  // A C++ exception out of the library is the host's own load's to report (it catches them).
  try {
    const specd_plugin_descriptor* d =
        entry ? entry(SPECD_ABI_VERSION_MAJOR, SPECD_ABI_VERSION_MINOR) : nullptr;
    // init and get_vtable only where the host would call them (its own load checks the rest).
    if (d && d->abi_major == SPECD_ABI_VERSION_MAJOR &&
        d->struct_size >= offsetof(specd_plugin_descriptor, get_vtable) + sizeof(d->get_vtable)) {
      specd_status* status = d->init ? d->init(host_table()) : nullptr;
      if (!status && d->get_vtable) d->get_vtable(d->kind);
    }
  } catch (...) {
  }
  const char ok = 1;
  if (::write(report_fd, &ok, 1) != 1) ::_exit(3);
  ::_exit(0);  // no destructors, no atexit: the library's code has been seen to return
}

std::string signal_text(int sig) {
  const char* name = sig == SIGSEGV   ? "SIGSEGV"
                     : sig == SIGABRT ? "SIGABRT"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGILL  ? "SIGILL"
                     : sig == SIGFPE  ? "SIGFPE"
                     : sig == SIGKILL ? "SIGKILL"
                                      : nullptr;
  return "signal " + std::to_string(sig) + (name ? std::string(", ") + name : "");
}

}  // namespace

std::optional<std::string> probe_plugin_load(const std::string& open_path, double timeout_s) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return std::nullopt;  // no probe: load as before
  std::fflush(nullptr);                                      // nothing buffered is written twice
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(report[0]);
    ::close(report[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::close(report[0]);
    probe_child(open_path, report[1], parent);
  }
  ::close(report[1]);
  char ok = 0;
  bool answered = false, timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{report[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n == 0 || (n < 0 && errno == EINTR)) continue;  // the deadline decides
    if (n < 0) {
      timed_out = true;  // cannot wait for it: it is stopped as if it had hung
      break;
    }
    answered = ::read(report[0], &ok, 1) == 1;  // 0: the child ended first
    break;
  }
  ::close(report[0]);
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (answered && ok == 1) return std::nullopt;
  const std::string where = " while it was being loaded (a constructor or its " +
                            std::string(SPECD_PLUGIN_ENTRY_SYMBOL) + "/init/get_vtable)";
  if (timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
    return std::string("did not finish loading within ") + seconds +
           " s (a constructor or its " SPECD_PLUGIN_ENTRY_SYMBOL
           "/init/get_vtable never returned): refused";
  }
  if (WIFSIGNALED(status))
    return "crashed" + where + " (" + signal_text(WTERMSIG(status)) + "): refused";
  return "called exit(" + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")" +
         where + ": refused";
}

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  saved_ = ::dup(STDOUT_FILENO);
  if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

StdoutToStderr::~StdoutToStderr() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  ::dup2(saved_, STDOUT_FILENO);
  ::close(saved_);
}

}  // namespace specd
