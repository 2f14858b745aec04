// The main of every doctest suite: doctest's own, plus kSkipReturnCode when a case skipped
// and none failed (see test_skip.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "test_skip.hpp"

namespace specd::test {
namespace {

std::atomic<int> g_skipped{0};

bool no_skip_wanted() {
  const char* v = std::getenv("SPECD_NO_SKIP");
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

}  // namespace

void skip_missing_reason(const std::string& why) {
  if (no_skip_wanted()) {
    FAIL_CHECK("SPECD_NO_SKIP is set, so this may not skip: " << why);
    return;
  }
  skip_here_reason(why);
}

void skip_here_reason(const std::string& why) {
  ++g_skipped;
  MESSAGE("SKIPPED: " << why);
}

int skipped_count() {
  return g_skipped.load();
}

}  // namespace specd::test

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;
  if (const int n = specd::test::skipped_count(); n > 0) {
    std::fprintf(stderr, "%d skip%s: reported to ctest as skipped (exit %d)\n", n,
                 n == 1 ? "" : "s", specd::test::kSkipReturnCode);
    return specd::test::kSkipReturnCode;
  }
  return 0;
}
