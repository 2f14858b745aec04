// Compares our encoding of a few strings with the Python tokenizer used for training, when
// the project model and its script are present (they are produced separately by train/).
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include "gguf/gguf_reader.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace specd;

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs a command and returns its stdout, or nullopt if it fails.
std::optional<std::string> run(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return std::nullopt;
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe.release());
  if (status != 0) return std::nullopt;
  return out;
}

// Pulls every integer out of the script's output ({"tokens": [1, 2, 3]}).
std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::string cur;
  for (char c : s + " ") {
    if ((c >= '0' && c <= '9') || (c == '-' && cur.empty())) {
      cur += c;
    } else if (!cur.empty() && cur != "-") {
      ids.push_back(std::stoi(cur));
      cur.clear();
    } else {
      cur.clear();
    }
  }
  return ids;
}

}  // namespace

TEST_CASE("encoding matches the training tokenizer of models/target.gguf" * SPECD_MAY_SKIP) {
  const std::filesystem::path root = SPECD_SOURCE_DIR;
  // SPECD_TEST_TARGET_GGUF points the test at another model made by train/.
  const char* env = std::getenv("SPECD_TEST_TARGET_GGUF");
  const std::filesystem::path model =
      env && *env ? std::filesystem::path(env) : root / "models" / "target.gguf";
  const auto script = root / "train" / "reference_forward.py";
  const char* python = "/usr/bin/python3";
  if (!std::filesystem::exists(model) || !std::filesystem::exists(script)) {
    ::specd::test::skip_missing("needs ", model.string(), " and ", script.string());
    return;
  }
  const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(model.string()));
  // One text covering the interesting cases: each script run pays for importing torch.
  const std::string text =
      "Hello world's  123 foo\n\n  bar\n"
      "def main():\n    return [i ** 2 for i in range(10)]  # squares\n"
      "\tna\u00efve caf\u00e9 \u03a9\u03bc\u03ad\u03b3\u03b1 \U0001F44B   multiple   spaces ";
  const auto out = run("cd " + shell_quote(root.string()) + " && " + python + " " +
                       shell_quote(script.string()) + " " + shell_quote(model.string()) +
                       " --tokenize " + shell_quote(text) + " 2>/dev/null");
  if (!out) {
    ::specd::test::skip_missing(script.string(), " --tokenize failed (no torch for ", python, "?)");
    return;
  }
  const auto want = parse_ids(*out);
  REQUIRE(!want.empty());
  // The script adds no BOS unless asked.
  CHECK(tok.encode(text, false) == want);
  CHECK(tok.decode(want) == text);
}
