// Markov tables for `specd audit`: the examples, the built-ins, and malformed files.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "audit/markov_model.hpp"
#include "common/error.hpp"
#include "test_paths.hpp"

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(SPECD_BINARY_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& path) {
  try {
    specd::load_markov_model(path);
  } catch (const specd::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the example tables load") {
  for (const char* f : {"peaked.toml", "q_zero.toml", "deterministic_target.toml"}) {
    const auto m = specd::load_markov_model(std::string(SPECD_SOURCE_DIR) + "/configs/markov/" + f);
    CHECK_NOTHROW(specd::validate_markov_model(m, f));
    CHECK(m.target.size() == m.vocab);
  }
}

TEST_CASE("the built-in tables are valid and cover the edge cases") {
  const auto tables = specd::builtin_markov_models();
  CHECK(tables.size() >= 7);
  for (const auto& t : tables) CHECK_NOTHROW(specd::validate_markov_model(t, t.name));
}

TEST_CASE("syntax errors carry file:line:col") {
  const std::string path = write_temp("audit_bad_syntax.toml", "vocab = 2\ninitial = [0.5, 0.5\n");
  const std::string msg = error_of(path);
  CHECK(msg.find(path + ":") == 0);
  INFO(msg);
  CHECK(msg.find(path + ":2:") == 0);  // the unterminated array of line 2
}

TEST_CASE("shape and value errors carry the location of the value") {
  const std::string path = write_temp("audit_bad_row.toml",
                                      "vocab = 2\n"
                                      "initial = [0.5, 0.5]\n"
                                      "target = [[0.5, 0.5], [1.0]]\n"
                                      "draft = [[0.5, 0.5], [0.5, 0.5]]\n");
  std::string msg = error_of(path);
  CHECK(msg.find(path + ":3:") == 0);
  CHECK(msg.find("target row 1") != std::string::npos);

  const std::string sum = write_temp("audit_bad_sum.toml",
                                     "vocab = 2\n"
                                     "initial = [0.5, 0.6]\n"
                                     "target = [[0.5, 0.5], [1.0, 0]]\n"
                                     "draft = [[0.5, 0.5], [0.5, 0.5]]\n");
  msg = error_of(sum);
  CHECK(msg.find(sum + ":2:") == 0);
  CHECK(msg.find("sums to") != std::string::npos);

  const std::string key = write_temp("audit_bad_key.toml", "vocab = 2\nvocabulary = 3\n");
  msg = error_of(key);
  CHECK(msg.find(key + ":2:") == 0);
  CHECK(msg.find("vocabulary") != std::string::npos);

  CHECK(error_of(write_temp("audit_no_draft.toml",
                            "vocab = 2\ninitial = [1, 0]\ntarget = [[1, 0], [0, 1]]\n"))
            .find("missing key 'draft'") != std::string::npos);
  CHECK_FALSE(error_of(std::string(SPECD_BINARY_DIR) + "/no-such-table.toml").empty());
}
