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

// A program started with pipes on its standard streams, for tests that act while it runs
// (send it a signal while it waits for its input, say).
struct RunningProgram {
  int pid = -1;
  int in = -1;  // its standard input, open until finish_program
  int out = -1;
  int err = -1;
};
// `blocked_signals` are blocked in the program from its start (the mask survives exec): a
// signal sent to it then waits until the program unblocks it, whenever it starts up.
RunningProgram start_program(const std::vector<std::string>& argv,
                             const std::vector<int>& blocked_signals = {});
// Writes `stdin_text` and closes its input, reads both outputs to their end and waits.
CliResult finish_program(RunningProgram& program, const std::string& stdin_text = "");

// True when `program` is found on PATH.
bool on_path(const std::string& program);

}  // namespace specd::test
