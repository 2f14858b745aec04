// Full `specd run`s on a random-weight model (plain, ngram, draft-model) must release
// everything they allocate. In a normal build each run goes under valgrind's leak checker
// (the test skips when valgrind is absent); in the sanitizer build (SPECD_SANITIZE=ON) the
// CLI itself carries LeakSanitizer, which fails the run at exit when anything leaked.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

using namespace specd;

namespace {

struct Run {
  std::string name;
  std::vector<std::string> sets;
};

}  // namespace

TEST_CASE("specd run leaks nothing: plain, ngram and draft-model") {
  const bool sanitized = SPECD_SANITIZED;
  if (!sanitized && !test::on_path("valgrind")) {
    ::specd::test::skip_missing("valgrind is not installed and this is not a sanitizer build");
    return;
  }
  const std::string dir = test::temp_dir("leaks");
  const std::string model = dir + "/random.gguf";
  test::RandomLlamaSpec spec;
  spec.n_layer = 1;  // valgrind runs ~50x slower; one layer is enough to reach every path
  test::write_random_llama(model, spec);
  const std::string config = dir + "/leaks.toml";
  std::ofstream(config) << "[engine]\nbackend = \"cpu\"\nthreads = 1\n\n[target]\nmodel = \""
                        << model << "\"\n\n[sampling]\ntemperature = 0.0\nmax_tokens = 6\n"
                        << "ignore_eos = true\n";
  const Run runs[] = {
      {"plain", {}},
      {"ngram", {"proposer.kind=ngram", "proposer.k=3"}},
      {"draft-model",
       {"proposer.kind=draft-model", "proposer.k=3", "proposer.model=\"" + model + "\""}},
      {"draft-model sampling",
       {"proposer.kind=draft-model", "proposer.k=3", "proposer.model=\"" + model + "\"",
        "sampling.temperature=0.8", "acceptance.rule=rejection"}},
  };
  for (const Run& run : runs) {
    CAPTURE(run.name);
    std::vector<std::string> argv;
    if (!sanitized)
      argv = {"valgrind",
              "--leak-check=full",
              "--errors-for-leak-kinds=definite,indirect",
              "--error-exitcode=99",
              "--quiet",
              "--suppressions=" + SPECD_SOURCE_DIR + "/tests/hardening/valgrind.supp"};
    argv.insert(argv.end(), {SPECD_CLI, "run", "-c", config, "-p", "def f(x): return x"});
    for (const std::string& s : run.sets) argv.insert(argv.end(), {"--set", s});
    test::CliResult r = test::run_program(argv);
    INFO("stderr: " << r.err.substr(0, 6000));
    CHECK(r.status == 0);
    CHECK(r.err.find("LeakSanitizer") == std::string::npos);
    CHECK(r.err.find("definitely lost") == std::string::npos);
  }
}
