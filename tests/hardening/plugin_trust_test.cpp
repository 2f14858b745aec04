// A plugin folder is code the run executes (docs/PLUGINS.md). `specd run` over folders that
// hold libraries which end the process when loaded: those not named like plugins are never
// loaded, relative [plugins] paths never reach into the working directory, and a real
// plugin file that exits or crashes while loading is named, with a failing status.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using specd::test::CliResult;
using specd::test::run_program;

namespace {

const std::string kTrapExit = std::string(SPECD_TRAP_DIR) + "/specd-accept-trap-exit.so";
const std::string kTrapAbort = std::string(SPECD_TRAP_DIR) + "/specd-accept-trap-abort.so";
const std::string kTrapLoop = std::string(SPECD_TRAP_DIR) + "/specd-accept-trap-loop.so";
const std::string kTrapPrint = std::string(SPECD_TRAP_DIR) + "/specd-accept-trap-print.so";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A folder with a model and `cfg.toml` whose [plugins] paths is `paths` (TOML array body).
struct RunFolder {
  std::string dir;
  std::string config;
  explicit RunFolder(const std::string& name, const std::string& paths) {
    dir = specd::test::temp_dir(name);
    const std::string model = dir + "/model.gguf";
    specd::test::write_random_llama(model, {});
    config = dir + "/cfg.toml";
    std::ofstream(config) << "[target]\nmodel = \"" << model
                          << "\"\n[engine]\nbackend = \"cpu\"\nthreads = 1\n"
                             "[sampling]\ntemperature = 0\nignore_eos = true\n"
                             "[plugins]\npaths = ["
                          << paths << "]\n";
  }
  void put(const std::string& library, const std::string& as) const {
    fs::create_directories(fs::path(dir + "/" + as).parent_path());
    fs::copy_file(library, dir + "/" + as, fs::copy_options::overwrite_existing);
  }
};

CliResult run(const std::string& config, const std::string& cwd = "") {
  std::vector<std::string> argv = {SPECD_CLI, "run", "-c", config,  "-p",
                                   "hello",   "-n",  "3",  "--json"};
  if (cwd.empty()) return run_program(argv);
  std::string line = "cd '" + cwd + "' && exec";
  for (const std::string& a : argv) line += " '" + a + "'";
  return run_program({"/bin/sh", "-c", line});
}

// The run generated its tokens: JSON with a token list on stdout.
void check_generated(const CliResult& r) {
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "\"tokens\":["));
}

}  // namespace

TEST_CASE("libraries in a plugin folder not named like plugins are never loaded") {
  RunFolder f("trust-names", "\"trust-plugins\"");
  f.put(kTrapExit, "trust-plugins/libhelper.so");
  f.put(kTrapAbort, "trust-plugins/specd-accept-greedy.so.bak");
  f.put(kTrapExit, "trust-plugins/specd-propose-ngram.so.1");
  check_generated(run(f.config));
}

TEST_CASE(
    "a plugin that exits, crashes or hangs while it is loaded is refused, named; the run goes on") {
  struct Trap {
    const std::string& library;
    std::string says;
  };
  for (const Trap& trap : {Trap{kTrapExit, "called exit(0) while it was being loaded"},
                           Trap{kTrapAbort, "crashed while it was being loaded"},
                           Trap{kTrapLoop, "did not finish loading within 2 s"}}) {
    CAPTURE(trap.says);
    RunFolder f("trust-trap", "\"trust-plugins\"");
    f.put(trap.library, "trust-plugins/specd-accept-trap.so");
    const CliResult r = run_program({"/usr/bin/env", "SPECD_PLUGIN_PROBE_TIMEOUT_S=2", SPECD_CLI,
                                     "run", "-c", f.config, "-p", "hello", "-n", "3", "--json"});
    check_generated(r);
    CHECK(contains(r.err, "warning"));
    CHECK(contains(r.err, f.dir + "/trust-plugins/specd-accept-trap.so: " + trap.says));
  }
}

TEST_CASE("what a plugin prints while it is loaded goes to stderr, never into run --json") {
  RunFolder f("trust-print", "\"trust-plugins\"");
  f.put(kTrapPrint, "trust-plugins/specd-accept-trap.so");
  const CliResult r = run(f.config);
  check_generated(r);
  CHECK(r.out.rfind("{", 0) == 0);
  CHECK_FALSE(contains(r.out, "TRAP-PRINTED"));
  CHECK(contains(r.err, "TRAP-PRINTED"));
}

TEST_CASE("relative [plugins] paths are relative to the configuration, never to the cwd") {
  RunFolder f("trust-relative", "\"my-plugins\"");  // my-plugins/ does not exist beside it
  const std::string cwd = specd::test::temp_dir("trust-cwd");
  fs::create_directories(cwd + "/my-plugins");
  fs::copy_file(kTrapExit, cwd + "/my-plugins/specd-accept-trap.so");
  const CliResult r = run(f.config, cwd);
  check_generated(r);
  // The path the user named and could not be used is a warning in `run` itself.
  CHECK(contains(r.err, "warning"));
  CHECK(contains(r.err, "'" + f.dir + "/my-plugins' does not exist"));
}

TEST_CASE("specd run warns about a plugin id found twice, naming the copy it uses") {
  const std::string shipped = fs::path(SPECD_CLI).parent_path().string() + "/plugins";
  RunFolder f("trust-duplicate", "\"trust-plugins\"");
  f.put(shipped + "/specd-propose-ngram.so", "trust-plugins/specd-propose-ngram.so");
  const CliResult r = run(f.config);
  check_generated(r);
  CHECK(contains(r.err, "warning"));
  CHECK(contains(r.err, "duplicate plugin id 'org.specd.propose.ngram'"));
  CHECK(contains(r.err, f.dir + "/trust-plugins/specd-propose-ngram.so is used"));
}
