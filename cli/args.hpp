// A small argument reader for the subcommands: --flag, --key value and --key=value.
#pragma once

#include <string>
#include <vector>

namespace specd::cli {

class Args {
 public:
  Args(int argc, char** argv);  // argv[0] (the subcommand) is skipped

  bool done() const { return pos_ >= args_.size(); }
  const std::string& peek() const { return args_[pos_]; }
  // True (and consumes it) when the next argument is `name` or `name=...`.
  bool match(const char* name);
  bool match(const char* long_name, const char* short_name);
  // The value of the option just matched (from "=..." or the next argument).
  std::string value();
  int int_value();
  double float_value();  // finite: "nan" and "inf" are refused
  // The next positional argument.
  std::string positional();
  // Throws UsageError for an argument nothing matched.
  [[noreturn]] void unknown() const;

 private:
  std::vector<std::string> args_;
  size_t pos_ = 0;
  std::string matched_;
  std::string inline_value_;
  bool has_inline_ = false;
};

}  // namespace specd::cli
