// Runs a program with arguments (no shell, so prompts with any bytes pass through as they
// are) and captures its exit status and output.
#pragma once

#include <string>
#include <vector>

namespace specd::test {

struct CliResult {
  int status = -1;  // exit status; 128 + signal when it was killed by one
  std::string out;  // stdout
  std::string err;  // stderr
};

// `stdin_text` is written to the program's standard input, which is then closed.
CliResult run_program(const std::vector<std::string>& argv, const std::string& stdin_text = "");

// True when `program` is found on PATH.
bool on_path(const std::string& program);

}  // namespace specd::test
