// `specd audit` as a command: exit statuses and option errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cmd_audit.hpp"
#include "test_paths.hpp"

namespace {

int audit(std::vector<std::string> args) {
  args.insert(args.begin(), "audit");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return run_audit_command(static_cast<int>(argv.size()), argv.data());
}

const std::string kPlugins = SPECD_BINARY_DIR + "/bin/plugins";

}  // namespace

TEST_CASE("a passing audit exits 0") {
  CHECK(audit({"--plugin-path", kPlugins, "--rule", "rejection", "--samples", "1000"}) == 0);
  CHECK(audit({"--plugin-path", kPlugins, "--rule", "exact-match", "--samples", "500", "--json",
               "--markov", SPECD_SOURCE_DIR + "/configs/markov/q_zero.toml"}) == 0);
}

TEST_CASE("a wrong label exits 1") {
  CHECK(audit({"--plugin-path", SPECD_AUDIT_TEST_PLUGIN_DIR, "--rule", "test-mislabelled",
               "--samples", "500"}) == 1);
}

TEST_CASE("usage errors exit 2") {
  CHECK(audit({"--no-such-option"}) == 2);
  CHECK(audit({"--tokens", "0"}) == 2);
  CHECK(audit({"--samples", "-3"}) == 2);
  CHECK(audit({"--temperature", "-1"}) == 2);
  CHECK(audit({"--tree", "2,x"}) == 2);
  CHECK(audit({"--alpha", "2"}) == 2);
  CHECK(audit({"--plugin-path", kPlugins, "--rule", "no-such-rule"}) == 2);
  CHECK(audit({"--markov", SPECD_BINARY_DIR + "/missing.toml"}) == 2);
  CHECK(audit({"--help"}) == 0);
}
