// What the real `specd` binary writes, when writing fails (a full disk, /dev/full) and when
// a run is interrupted: every failure is an exit status with its reason, never output lost
// in silence.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <sstream>

#include <csignal>

#include <fstream>
#include <string>
#include <vector>

#include "../bench/json_parse.hpp"
#include "cli_cases.hpp"
#include "cli_runner.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

using namespace specd;

namespace {

using test::write_text;

struct Files {
  std::string dir = test::temp_dir("output");
  std::string model = dir + "/random.gguf";
  std::string good = dir + "/good.toml";

  Files() {
    test::write_random_llama(model, test::RandomLlamaSpec{});
    write_text(good, test::cli_config(model));
  }
};

const Files& files() {
  static Files f;
  return f;
}

// Runs specd with its standard output sent to `out_path` (through sh, which only redirects).
test::CliResult run_to(const std::string& out_path, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"sh", "-c", "exec \"$0\" \"$@\" > " + out_path, SPECD_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_program(argv);
}

}  // namespace

TEST_CASE("a failed write to standard output is exit 1 with the reason" * SPECD_MAY_SKIP) {
  if (access("/dev/full", W_OK) != 0) {
    ::specd::test::skip_here("no writable /dev/full on this machine");
    return;
  }
  const Files& f = files();
  const std::vector<std::vector<std::string>> commands = {
      {"run", "-c", f.good, "-p", "x", "--json"},
      {"run", "-c", f.good, "-p", "x"},  // streaming
      {"plugins", "--json"},
      {"plugins"},
      {"check-config", f.good},
      {"audit", "--rule", "greedy", "--samples", "100"},
  };
  for (const auto& args : commands) {
    CAPTURE(args[0]);
    CAPTURE(args.back());
    const test::CliResult r = run_to("/dev/full", args);
    INFO("stderr: " << r.err);
    // audit keeps 1 for a wrong label: its own runtime failures are 3 (docs/AUDIT.md).
    CHECK(r.status == (args[0] == "audit" ? 3 : 1));
    CHECK(r.err.find("standard output: cannot write: No space left on device") !=
          std::string::npos);
  }
}

TEST_CASE("files that cannot be written say why" * SPECD_MAY_SKIP) {
  if (access("/dev/full", W_OK) != 0) {
    ::specd::test::skip_here("no writable /dev/full on this machine");
    return;
  }
  // The writer behind bench reports and model copies: a full disk is an error with its
  // reason, not an empty file and success.
  try {
    write_file("/dev/full", std::string(100000, 'x'));
    FAIL("writing to /dev/full succeeded");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "/dev/full: cannot write: No space left on device");
  }
  const test::CliResult r = test::run_program(
      {SPECD_CLI, "bench", "--quantize", files().model, "--type", "q8_0", "--out", "/dev/full"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("/dev/full: cannot write: No space left on device") != std::string::npos);
  const test::CliResult missing =
      test::run_program({SPECD_CLI, "bench", "--quantize", files().model, "--out",
                         files().dir + "/no/such/dir.gguf"});
  CHECK(missing.status == 1);
  CHECK(missing.err.find("no/such/dir.gguf: cannot create: No such file or directory") !=
        std::string::npos);
}

// Item 6: text that a stop string later cuts must not be streamed. Stop strings are taken
// from the run's own output at many places, so most of them span a token boundary (the
// case that streamed too much before: stop "f, v" streamed "self," where --json said "sel").
TEST_CASE("streamed text equals the final text when a stop string cuts it" * SPECD_MAY_SKIP) {
  const std::string model = std::string(SPECD_SOURCE_DIR) + "/models/target.gguf";
  if (access(model.c_str(), R_OK) != 0) {
    ::specd::test::skip_missing("the shipped model ", model, " is missing");
    return;
  }
  const std::string config = files().dir + "/shipped.toml";
  write_text(config, "[engine]\nbackend = \"cpu\"\nthreads = 1\n\n[target]\nmodel = \"" + model +
                         "\"\n\n[sampling]\ntemperature = 0.0\nmax_tokens = 24\n"
                         "ignore_eos = true\n");
  auto run = [&](const std::string& stop, bool json) {
    std::vector<std::string> argv = {SPECD_CLI, "run", "-c", config, "-p", "class A:"};
    if (!stop.empty()) argv.insert(argv.end(), {"--set", "sampling.stop=['" + stop + "']"});
    if (json) argv.push_back("--json");
    test::CliResult r = test::run_program(argv);
    REQUIRE(r.status == 0);
    return r.out;
  };
  const std::string full = test::JsonParser(run("", true)).parse()["text"].s;
  REQUIRE(full.size() > 20);
  int checked = 0;
  for (size_t at = 1; at + 5 <= full.size() && checked < 8; at += 3) {
    const std::string stop = full.substr(at, 5);
    if (stop.find_first_of("'\n\\") != std::string::npos) continue;
    ++checked;
    CAPTURE(stop);
    const std::string expected = full.substr(0, full.find(stop));
    const test::Json json = test::JsonParser(run(stop, true)).parse();
    CHECK(json["text"].s == expected);
    CHECK(json["stop_reason"].s == "stop");
    // Streaming prints the text, then a newline before the statistics (on stderr).
    CHECK(run(stop, false) == expected + "\n");
  }
  CHECK(checked >= 4);
}

TEST_CASE("a stop string that is not whole UTF-8 characters is refused") {
  // A lone continuation byte would cut "\u00a9" (C2 A9) in half.
  const test::CliResult r =
      test::run_program({SPECD_CLI, "check-config", files().good, "--set", "sampling.stop=\xa9"});
  CHECK(r.status == 2);
  CHECK(r.err.find("--set sampling.stop: 'stop' strings must be valid UTF-8") != std::string::npos);
}

// Item 12: SIGINT or SIGTERM during a run prints what was generated, with stop reason
// "interrupted", and exits 128 + the signal. The signal is sent while blocked, so it
// arrives exactly when the CLI is ready for it, before generation starts; the engine test
// covers an interruption between rounds.
TEST_CASE("SIGINT and SIGTERM end a run with its output and stop reason interrupted") {
  const std::string& good = files().good;
  for (int signal : {SIGINT, SIGTERM}) {
    for (bool json : {true, false}) {
      CAPTURE(signal);
      CAPTURE(json);
      std::vector<std::string> argv = {SPECD_CLI, "run", "-c", good, "-n", "50"};
      if (json) argv.push_back("--json");
      test::RunningProgram p = test::start_program(argv, {SIGINT, SIGTERM});
      REQUIRE(kill(p.pid, signal) == 0);
      const test::CliResult r = test::finish_program(p, "def f");
      INFO("stdout: " << r.out);
      INFO("stderr: " << r.err);
      CHECK(r.status == 128 + signal);
      if (json) {
        const test::Json out = test::JsonParser(r.out).parse();
        CHECK(out["stop_reason"].s == "interrupted");
        CHECK(out["tokens"].a.size() < 50);
      } else {
        CHECK(r.err.find("(stop: interrupted)") != std::string::npos);
      }
    }
  }
}

// Issue #39, items 2 to 4: before generation starts a signal ends the process at once,
// whatever it waits for: `run` reading a prompt from a pipe that never ends, `serve` reading
// a chat template from one (signals were blocked or restarted reads until then).
TEST_CASE("SIGTERM and SIGINT before generation or listening end the process at once") {
  const std::string& good = files().good;
  const std::string serve_config = files().dir + "/serve-template-stdin.toml";
  {
    std::ifstream in(good);
    std::stringstream text;
    text << in.rdbuf() << "\n[server]\nport = 0\nchat_template_file = \"/dev/stdin\"\n";
    std::ofstream(serve_config) << text.str();
  }
  for (int signal : {SIGTERM, SIGINT}) {
    for (const bool serve : {false, true}) {
      CAPTURE(signal);
      CAPTURE(serve);
      const std::vector<std::string> argv =
          serve ? std::vector<std::string>{SPECD_CLI, "serve", "-c", serve_config}
                : std::vector<std::string>{SPECD_CLI, "run", "-c", good};
      test::RunningProgram p = test::start_program(argv);
      usleep(400 * 1000);  // it waits on its standard input, which stays open
      const auto t0 = std::chrono::steady_clock::now();
      REQUIRE(kill(p.pid, signal) == 0);
      // The input is closed only after the program had 5 s to end on its own.
      int status = 0;
      bool ended = false;
      for (int i = 0; i < 500 && !ended; ++i) {
        ended = waitpid(p.pid, &status, WNOHANG) == p.pid;
        if (!ended) usleep(10 * 1000);
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!ended) {
        kill(p.pid, SIGKILL);
        waitpid(p.pid, &status, 0);
      }
      close(p.in);
      close(p.out);
      close(p.err);
      CHECK(ended);
      CHECK(s < 5);
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      CHECK(code == 128 + signal);
    }
  }
}
