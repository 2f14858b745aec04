// Errors inside specd: exceptions in C++, status objects at the ABI, a message and an
// exit status at the CLI. UsageError is bad input the user can fix (exit 2: config,
// command line); Error is everything else that went wrong at run time (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace specd {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Bad configuration or command line: the CLI exits with status 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

}  // namespace specd
