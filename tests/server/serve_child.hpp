// `specd serve` as a child process of a test: started with its stderr in a log file, waited
// for until it serves, watched through /metrics, killed. Every wait is bounded.
#pragma once

#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shipped_models.hpp"

namespace specd::test {

// Runs `cli` with `args`, its stderr written to `log_path` and the NAME=VALUE settings of `env`
// in its environment alone; returns the child's pid.
inline pid_t spawn_with_log(const std::string& cli, std::vector<std::string> args,
                            const std::string& log_path, const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), cli);
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log_path.c_str(), "w", stderr);
    (void)f;
    for (const std::string& e : env) putenv(strdup(e.c_str()));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(cli.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits (at most 120 s) for the line of `log_path` that names the bound port, and then for
// the one that says the model is loaded (the port opens first). Returns the port, or 0 where
// the child `pid` exited first (then `pid` becomes -1) or the time ran out.
inline int wait_until_serving(const std::string& log_path, pid_t& pid) {
  const std::string marker = "listening on http://127.0.0.1:";
  for (int i = 0; i < 2400; ++i) {
    const std::string log = read_text(log_path);
    const size_t at = log.find(marker);
    if (at != std::string::npos && log.find("specd serve: ready", at) != std::string::npos)
      return std::stoi(log.substr(at + marker.size()));
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

// Kills and reaps the child, if there is one still; `pid` becomes -1.
inline void kill_child(pid_t& pid) {
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  pid = -1;
}

// Polls /metrics (at most 30 s) until it holds `line`.
inline bool metrics_show(httplib::Client& c, const std::string& line) {
  for (int i = 0; i < 600; ++i) {
    auto m = c.Get("/metrics");
    if (m && m->body.find("\n" + line + "\n") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace specd::test
