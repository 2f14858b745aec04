// What the real `specd` binary writes, when writing fails (a full disk, /dev/full) and when
// a run is interrupted: every failure is an exit status with its reason, never output lost
// in silence.
#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "random_llama.hpp"

using namespace specd;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

struct Files {
  std::string dir = test::temp_dir("output");
  std::string model = dir + "/random.gguf";
  std::string good = dir + "/good.toml";

  Files() {
    test::write_random_llama(model, test::RandomLlamaSpec{});
    write_text(good,
               "[engine]\nbackend = \"cpu\"\nthreads = 1\n\n[target]\nmodel = \"" + model +
                   "\"\n\n[sampling]\ntemperature = 0.0\nmax_tokens = 4\nignore_eos = true\n");
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

TEST_CASE("a failed write to standard output is exit 1 with the reason") {
  if (access("/dev/full", W_OK) != 0) {
    MESSAGE("skipped: no writable /dev/full on this machine");
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
    CHECK(r.status == 1);
    CHECK(r.err.find("standard output: cannot write: No space left on device") !=
          std::string::npos);
  }
}

TEST_CASE("files that cannot be written say why") {
  if (access("/dev/full", W_OK) != 0) {
    MESSAGE("skipped: no writable /dev/full on this machine");
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
