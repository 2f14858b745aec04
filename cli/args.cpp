#include "args.hpp"

#include <cmath>
#include <cstdlib>

#include "common/error.hpp"

namespace specd::cli {

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) args_.emplace_back(argv[i]);
}

bool Args::match(const char* name) {
  if (done()) return false;
  const std::string& a = args_[pos_];
  std::string n(name);
  if (a == n) {
    matched_ = n;
    has_inline_ = false;
    ++pos_;
    return true;
  }
  if (a.size() > n.size() && a.compare(0, n.size(), n) == 0 && a[n.size()] == '=' &&
      n.rfind("--", 0) == 0) {
    matched_ = n;
    inline_value_ = a.substr(n.size() + 1);
    has_inline_ = true;
    ++pos_;
    return true;
  }
  return false;
}

bool Args::match(const char* long_name, const char* short_name) {
  return match(long_name) || match(short_name);
}

std::string Args::value() {
  if (has_inline_) {
    has_inline_ = false;
    return inline_value_;
  }
  if (done()) throw UsageError("option " + matched_ + " needs a value");
  return args_[pos_++];
}

int Args::int_value() {
  std::string v = value();
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < INT32_MIN || n > INT32_MAX)
    throw UsageError("option " + matched_ + " needs an integer, got '" + v + "'");
  return static_cast<int>(n);
}

double Args::float_value() {
  std::string v = value();
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0')
    throw UsageError("option " + matched_ + " needs a number, got '" + v + "'");
  if (!std::isfinite(x))
    throw UsageError("option " + matched_ + " needs a finite number, got '" + v + "'");
  return x;
}

std::string Args::positional() {
  if (done()) throw UsageError("missing argument");
  return args_[pos_++];
}

void Args::unknown() const {
  const std::string& a = args_[pos_];
  if (a.rfind("-", 0) == 0) throw UsageError("unknown option '" + a + "' (see specd --help)");
  throw UsageError("unexpected argument '" + a + "' (see specd --help)");
}

}  // namespace specd::cli
