// The subcommands of the specd CLI. Each takes the arguments after its name (argv[0] is
// the subcommand) and returns the exit status: 0 ok, 1 runtime error, 2 usage/config error.
// They may throw specd::UsageError / specd::Error; main() turns those into the status.
#pragma once

namespace specd::cli {

int run_command(int argc, char** argv);
int plugins_command(int argc, char** argv);
int check_config_command(int argc, char** argv);
int serve_command(int argc, char** argv);

}  // namespace specd::cli
