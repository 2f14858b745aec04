// What the CLI tests share: the files they write before they run `specd` (text, a complete
// configuration for a model), and the rows of their tables of cases with the checks of each.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace specd::test {

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A complete config for `model` on the CPU, greedy, 4 tokens past any end of sequence;
// `engine` is added to [engine] and `extra` at the end (TOML tables may follow).
inline std::string cli_config(const std::string& model, const std::string& engine = "",
                              const std::string& extra = "") {
  return "[engine]\nbackend = \"cpu\"\nthreads = 1\n" + engine + "\n[target]\nmodel = \"" + model +
         "\"\n\n[sampling]\ntemperature = 0.0\nmax_tokens = 4\nignore_eos = true\n" + extra;
}

// One row of a table of CLI cases: `specd` with `args` ends with `status` and says `needle`.
struct CliCase {
  std::string name;
  std::vector<std::string> args;  // after `specd`
  int status;
  std::string needle;  // in stderr for failures, in stdout or stderr for successes
  std::string stdin_text = "";
  bool needs_non_root = false;  // root reads files whatever their mode
};

// Checks what `specd` did in case `c`: its status, the needle, and for a failure one clear
// message starting with one of `error_starts`, never a crash.
inline void check_cli_result(const CliCase& c, const CliResult& r,
                             const std::vector<std::string>& error_starts) {
  INFO("stdout: " << r.out.substr(0, 2000));
  INFO("stderr: " << r.err.substr(0, 2000));
  CHECK(r.status == c.status);
  const std::string& where = c.status == 0 ? r.out + r.err : r.err;
  CHECK(where.find(c.needle) != std::string::npos);
  if (c.status != 0) {
    bool starts_clearly = false;
    for (const std::string& start : error_starts)
      starts_clearly = starts_clearly || r.err.rfind(start, 0) == 0;
    CHECK(starts_clearly);
  }
}

}  // namespace specd::test
