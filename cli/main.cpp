// specd — speculative decoding for LLMs. Entry point: dispatches to the subcommands and
// turns errors into messages and exit statuses (2 usage/config, 1 runtime).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cmd_audit.hpp"
#include "cmd_bench.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "gguf/mapped_file.hpp"
#include "specd/version.h"

namespace {

const char* kHelp =
    "specd — speculative decoding for LLMs\n"
    "\n"
    "usage: specd <command> [options]\n"
    "\n"
    "commands:\n"
    "  run -c FILE [-p PROMPT] [-n N] [--set section.key=value]... [--json]\n"
    "                     generate text with the configured target, proposer and rule\n"
    "  serve -c FILE [--host H] [--port P]\n"
    "                     serve OpenAI-compatible completions over HTTP (docs/SERVER.md)\n"
    "  audit [--markov FILE] [--rule ID] [--json] ...\n"
    "                     measure the lossless label of every installed acceptance rule\n"
    "  audit -c FILE      check a configuration's speculative run against plain sampling\n"
    "  bench -c FILE --out DIR, ab -c FILE --out DIR\n"
    "                     benchmark arms against plain decoding on task suites: report.json,\n"
    "                     report.md and SVG charts (see docs/BENCH.md)\n"
    "  plugins [--json] [--plugin-path DIR]...\n"
    "                     list the plugins found (backends with their availability)\n"
    "  check-config FILE [--set section.key=value]...\n"
    "                     validate a configuration file and print every problem\n"
    "\n"
    "options:\n"
    "  --version          print the version and ABI version\n"
    "  --help             this text; `specd <command> --help` for a command's options\n"
    "\n"
    "Plugins are searched in [plugins] paths of the config, then SPECD_PLUGIN_PATH\n"
    "(colon-separated), then the plugins/ folder beside this executable.\n"
    "Exit status: 0 ok, 1 runtime error, 2 usage or configuration error.\n";

int dispatch(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(kHelp, stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  if (command == "--version" || command == "-V") {
    std::printf("specd %s (ABI %u.%u)\n", SPECD_VERSION, SPECD_ABI_VERSION_MAJOR,
                SPECD_ABI_VERSION_MINOR);
    return 0;
  }
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  if (command == "run") return specd::cli::run_command(sub_argc, sub_argv);
  if (command == "serve") return specd::cli::serve_command(sub_argc, sub_argv);
  if (command == "plugins") return specd::cli::plugins_command(sub_argc, sub_argv);
  if (command == "check-config") return specd::cli::check_config_command(sub_argc, sub_argv);
  if (command == "audit") return run_audit_command(sub_argc, sub_argv);
  if (command == "bench" || command == "ab") return run_bench_command(sub_argc, sub_argv);
  throw specd::UsageError("unknown command '" + command + "' (see specd --help)");
}

}  // namespace

int main(int argc, char** argv) {
  // A model file truncated while mapped: a clear message and exit 1, not a bare SIGBUS.
  specd::install_mapped_file_fault_handler();
  // Output that is not a terminal is written in one piece when the command flushes it (run
  // flushes each streamed piece), so that a failed write is seen while its reason, errno,
  // is still at hand, not in the middle of a printf whose error is only noticed later.
  static char out_buffer[1 << 20];
  if (!isatty(1)) std::setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
  try {
    const int status = dispatch(argc, argv);
    // What was printed must have arrived: a full disk or /dev/full is an error (exit 1).
    // A command that failed has said why already.
    if (status == 0)
      specd::flush_stdout();
    else
      std::fflush(stdout);
    return status;
  } catch (const specd::UsageError& e) {
    std::fprintf(stderr, "specd: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd: error: %s\n", e.what());
    return 1;
  }
}
