// specd serve -c FILE [--host H] [--port P] [--set section.key=value]...
// An OpenAI-compatible HTTP server over the configured engine (docs/SERVER.md). The port
// opens first and the model loads behind it (GET /health is 503 until it is ready); a load
// that fails ends the process with its error. SIGTERM, SIGINT or SIGHUP during the load ends
// it at once; once ready, it drains: requests in flight are answered, then it exits 0. A
// second signal during the drain ends it at once.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "args.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/memory_release.hpp"
#include "config/config.hpp"
#include "plugin/registry.hpp"
#include "server/http_server.hpp"
#include "server/server_checks.hpp"

namespace specd::cli {
namespace {

const char* kServeHelp =
    "usage: specd serve -c FILE [--host H] [--port P] [--set section.key=value]...\n"
    "  -c, --config FILE   the run configuration (TOML) with an optional [server] section\n"
    "  --host H            address to bind (default [server] host, 127.0.0.1)\n"
    "  --port P            port (default [server] port, 8080; 0 = any free port)\n"
    "  --set s.k=v         override any configuration key (checked like the file)\n"
    "The bound address is printed to standard error as `specd serve: listening on\n"
    "http://H:P`; the model then loads (GET /health answers 503 until it has) and `specd\n"
    "serve: ready` follows. A model that fails to load ends the process with its error.\n"
    "SIGTERM, SIGINT or SIGHUP while it loads ends the process at once (128 + the signal);\n"
    "once ready, it stops taking requests, answers those in flight (cancelling those still\n"
    "running after [server] drain_timeout_s) and exits 0; a second signal during the drain\n"
    "ends it at once. A host that is not loopback needs [server] api_key, or\n"
    "allow_public_without_key = true.\n";

const char* signal_name(int sig) {
  return sig == SIGTERM  ? "SIGTERM"
         : sig == SIGINT ? "SIGINT"
         : sig == SIGHUP ? "SIGHUP"
                         : "signal";
}

// `text` as a TOML basic string: quotes, backslashes and control characters escaped, so
// that a command-line value is always taken as exactly that text.
std::string toml_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

}  // namespace

int serve_command(int argc, char** argv) {
  Args args(argc, argv);
  std::string config_path;
  std::vector<std::string> overrides;
  while (!args.done()) {
    if (args.match("--config", "-c")) {
      config_path = args.value();
    } else if (args.match("--host")) {
      overrides.push_back("server.host=" + toml_string(args.value()));
    } else if (args.match("--port")) {
      overrides.push_back("server.port=" + std::to_string(args.int_value()));
    } else if (args.match("--set")) {
      overrides.push_back(args.value());
    } else if (args.match("--help", "-h")) {
      std::fputs(kServeHelp, stdout);
      return 0;
    } else {
      args.unknown();
    }
  }
  if (config_path.empty()) throw UsageError("serve needs -c FILE (see specd serve --help)");
  Config config = load_config(config_path, overrides);
  check_required_for_run(config);
  server::check_server_host(config);
  server::check_server_limits(config);
  const std::string& host = config.server.host;

  // Every thread started from here on inherits the blocked signals; one thread waits for them.
  // Until the server listens (plugins load, the chat template is read: either may hang on a
  // bad file) an early watcher ends the process at once on SIGTERM/SIGINT (143/130); then it
  // hands over (woken by SIGUSR1) to the watcher that drains.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  // A closed terminal or session: drain, as for SIGTERM; unless SIGHUP is ignored (nohup),
  // which it stays.
  struct sigaction hangup {};
  sigaction(SIGHUP, nullptr, &hangup);
  if (hangup.sa_handler != SIG_IGN) sigaddset(&signals, SIGHUP);
  sigset_t early_signals = signals;
  sigaddset(&early_signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &early_signals, nullptr);
  std::thread early_watcher([&early_signals] {
    int sig = 0;
    sigwait(&early_signals, &sig);
    if (sig == SIGUSR1) return;
    std::fprintf(stderr, "specd serve: %s before listening: stopped\n", signal_name(sig));
    std::fflush(stderr);
    std::_Exit(128 + sig);
  });
  struct HandOver {
    std::thread& thread;
    ~HandOver() {  // also when setting up throws: the early watcher must not outlive it
      if (!thread.joinable()) return;
      pthread_kill(thread.native_handle(), SIGUSR1);
      thread.join();
    }
  } hand_over{early_watcher};

  // Memory a finished request freed goes back to the system (RSS stays flat after bursts).
  trim_heap_eagerly();
  PluginRegistry registry(config.plugins.paths);
  for (const std::string& w : registry.warnings())
    std::fprintf(stderr, "specd serve: warning: %s\n", w.c_str());
  server::HttpServer http(config, registry);
  int port = http.bind(config.server.host, config.server.port);
  if (!server::is_loopback_host(host) && config.server.api_key.empty())
    std::fprintf(stderr,
                 "specd serve: warning: listening on %s without [server] api_key "
                 "(allow_public_without_key = true): anyone who can reach it can use it\n",
                 host.c_str());
  std::atomic<bool> served{false}, load_failed{false};
  pthread_kill(early_watcher.native_handle(), SIGUSR1);
  early_watcher.join();
  // After the hand-over, so that a signal sent on this line reaches the watcher below.
  std::fprintf(stderr, "specd serve: chat template: %s\n", http.chat_template_note().c_str());
  std::fprintf(stderr, "specd serve: listening on http://%s:%d\n", config.server.host.c_str(),
               port);
  std::fflush(stderr);
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (served) return;  // woken by the main thread below
    // While the model loads no request has been admitted, so there is nothing to drain and
    // no reason to wait for the load (minutes for a large model): end at once, as before
    // listening.
    if (!load_failed && http.abandon_load()) {
      std::fprintf(stderr, "specd serve: %s while loading the model: stopped\n", signal_name(sig));
      std::fflush(stderr);
      std::_Exit(128 + sig);
    }
    if (!load_failed)  // else woken by the loader below
      std::fprintf(stderr, "specd serve: %s: draining (a second signal stops at once)\n",
                   signal_name(sig));
    // A second signal while the drain runs ends the process at once: an operator who sends
    // one means "now", whatever is still in flight. Watched on a thread of its own, since
    // stop() blocks for the whole drain. One within 200 ms of the first is the same request
    // delivered twice (timeout(1) signals its child and then the child's process group).
    const auto first_signal_at = std::chrono::steady_clock::now();
    std::atomic<bool> drained{false};
    std::thread second_signal([&] {
      while (!drained && !load_failed) {
        const timespec wait = {0, 50'000'000};
        const int again = sigtimedwait(&signals, nullptr, &wait);
        if (again > 0 &&
            std::chrono::steady_clock::now() - first_signal_at < std::chrono::milliseconds(200))
          continue;
        if (again > 0 && !served && !load_failed) {
          std::fprintf(stderr, "specd serve: second %s while draining: stopped\n",
                       signal_name(again));
          std::fflush(stderr);
          std::_Exit(128 + again);
        }
      }
    });
    // A signal that comes before the listener runs must still stop it: repeat until it has.
    bool first = true;
    while (!served) {
      int cancelled = http.stop();
      if (first && cancelled > 0)
        std::fprintf(stderr,
                     "specd serve: drain_timeout_s passed: cancelled %d request(s) in flight\n",
                     cancelled);
      first = false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    drained = true;
    second_signal.join();
  });
  // The model loads while the port answers probes; a failure stops the listener (through the
  // watcher, which repeats stop() until it has) and is rethrown once serving has ended.
  std::exception_ptr load_error;
  std::thread loader([&] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      http.load();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "specd serve: %s\n", http.kv_summary().c_str());
      std::fprintf(stderr, "specd serve: ready (model loaded in %.2f s)\n", s);
      std::fflush(stderr);
    } catch (...) {
      load_error = std::current_exception();
      load_failed = true;
      pthread_kill(watcher.native_handle(), SIGTERM);
    }
  });
  http.serve();
  served = true;
  loader.join();  // a load still running when a signal stopped the server ends first
  pthread_kill(watcher.native_handle(), SIGTERM);  // wakes it when no signal came
  watcher.join();
  if (load_error) std::rethrow_exception(load_error);
  std::fprintf(stderr, "specd serve: stopped\n");
  return 0;
}

}  // namespace specd::cli
