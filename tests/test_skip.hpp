// Skips reported as skips. A test case that cannot check anything here calls one of these
// and returns; the suite then exits with kSkipReturnCode, which ctest shows as "Skipped"
// (SKIP_RETURN_CODE), so a checkout without the data is never green with zero checks.
#pragma once

#include <doctest/doctest.h>

#include <sstream>
#include <string>

// Marks a case that may skip while the rest of its suite runs: tests/CMakeLists.txt gives
// such cases their own ctest entry, <suite>.may_skip, e.g.
//   TEST_CASE("logits match llama.cpp's" * SPECD_MAY_SKIP)
#define SPECD_MAY_SKIP doctest::test_suite("may_skip")

namespace specd::test {

namespace detail {
// The parts written one after another to a stream: a skip's reason.
template <class... Parts>
std::string streamed_text(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}
}  // namespace detail

// ctest's SKIP_RETURN_CODE for every suite (the automake convention).
inline constexpr int kSkipReturnCode = 77;

// An input that CI always has is missing: the shared llama.cpp reference data, PyTorch, the
// shipped models, valgrind. With SPECD_NO_SKIP=1 in the environment (CI sets it) this fails
// the case instead, so a suite that must run there cannot pass by skipping.
void skip_missing_reason(const std::string& why);
template <class... Parts>
void skip_missing(const Parts&... why) {
  skip_missing_reason(detail::streamed_text(why...));
}

// This machine or build cannot run the case (root reads every file, no /dev/full, a
// sanitizer build, a CPU without the instruction set): always a skip, never a failure.
void skip_here_reason(const std::string& why);
template <class... Parts>
void skip_here(const Parts&... why) {
  skip_here_reason(detail::streamed_text(why...));
}

// How many times a case of this process skipped (the exit code's reason).
int skipped_count();

}  // namespace specd::test
