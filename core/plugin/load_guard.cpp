#include "plugin/load_guard.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace specd {
namespace {

// Signal handlers and atexit may only touch what is prepared here (async-signal safety).
char g_exit_message[4608];
char g_crash_message[4608];
volatile std::sig_atomic_t g_active = 0;
bool g_atexit_registered = false;

constexpr int kSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
constexpr int kSignalCount = sizeof(kSignals) / sizeof(kSignals[0]);
struct sigaction g_previous[kSignalCount];

void write_all(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void on_exit_while_loading() {
  if (!g_active) return;
  write_all(g_exit_message);
  ::_exit(1);
}

void on_crash_while_loading(int sig) {
  for (int i = 0; i < kSignalCount; ++i)
    if (kSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  if (g_active) {
    write_all(g_crash_message);
    write_all(sig == SIGABRT   ? "SIGABRT)\n"
              : sig == SIGSEGV ? "SIGSEGV)\n"
              : sig == SIGBUS  ? "SIGBUS)\n"
              : sig == SIGILL  ? "SIGILL)\n"
                               : "SIGFPE)\n");
  }
  // Delivered with the previous action once this handler returns (the signal is blocked
  // while it runs); a hardware fault would recur anyway.
  std::raise(sig);
}

}  // namespace

LoadGuard::LoadGuard(const std::string& library_path) {
  std::snprintf(g_exit_message, sizeof g_exit_message,
                "specd: error: the plugin library %s called exit() while it was being loaded "
                "(a constructor or its specd_plugin_entry/init); remove it from the plugin "
                "search path\n",
                library_path.c_str());
  std::snprintf(g_crash_message, sizeof g_crash_message,
                "specd: error: the plugin library %s crashed while it was being loaded (a "
                "constructor or its specd_plugin_entry/init); remove it from the plugin search "
                "path (signal ",
                library_path.c_str());
  if (!g_atexit_registered) g_atexit_registered = std::atexit(on_exit_while_loading) == 0;
  struct sigaction action {};
  action.sa_handler = on_crash_while_loading;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < kSignalCount; ++i) sigaction(kSignals[i], &action, &g_previous[i]);
  g_active = 1;
}

LoadGuard::~LoadGuard() {
  g_active = 0;
  for (int i = 0; i < kSignalCount; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
}

}  // namespace specd
