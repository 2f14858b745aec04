// [proposer] kind = "auto" reads what drafts from the file, on llama.cpp-layout files
// (tests/compat) and random-weight models: each kind of draft file is recognised, and a file
// that cannot draft is an error naming it, never a silent fallback to plain decoding.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "common/error.hpp"
#include "config/config.hpp"
#include "config/proposer_kind.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"

using namespace specd;

namespace {

const std::string kCompat = std::string(SPECD_SOURCE_DIR) + "/tests/compat";

Config resolved(const std::string& target, const std::string& model) {
  std::vector<std::string> o = {"target.model=\"" + target + "\"", "proposer.kind=auto"};
  if (!model.empty()) o.push_back("proposer.model=\"" + model + "\"");
  return parse_config("", "auto.toml", o);
}

std::string error_of(const std::string& target, const std::string& model) {
  try {
    resolved(target, model);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kind = auto: the proposer each draft file calls for") {
  const std::string dir = test::temp_dir("proposer_kind");
  const std::string qwen35 = kCompat + "/qwen35/qwen35-f16.gguf";
  test::RandomLlamaSpec dense;
  const std::string llama = dir + "/llama.gguf";
  test::write_random_llama(llama, dense);

  // The target's own MTP layers, with no model named (it becomes the target).
  Config mtp = resolved(qwen35, "");
  CHECK(mtp.proposer.kind == "mtp");
  CHECK(mtp.proposer.kind_auto);
  CHECK(mtp.proposer.model == qwen35);
  CHECK(resolved(qwen35, qwen35).proposer.kind == "mtp");
  // Heads and drafters in llama.cpp's layout.
  CHECK(resolved(qwen35, kCompat + "/eagle3/eagle3-shared.gguf").proposer.kind == "eagle");
  CHECK(resolved(qwen35, kCompat + "/dflash/dflash.gguf").proposer.kind == "dflash");
  // A model of a supported architecture drafts as a draft model, also a hybrid one that is
  // not the target (its MTP layers are not what drafts then).
  CHECK(resolved(llama, llama).proposer.kind == "draft-model");
  Config named = resolved(llama, qwen35);
  CHECK(named.proposer.kind == "draft-model");
  // Other kinds are left as they are.
  CHECK_FALSE(parse_config("", "a.toml", {"proposer.kind=ngram"}).proposer.kind_auto);
}

TEST_CASE("kind = auto: a file that cannot draft is an error naming it") {
  const std::string dir = test::temp_dir("proposer_kind_errors");
  test::RandomLlamaSpec dense;
  const std::string llama = dir + "/llama.gguf";
  test::write_random_llama(llama, dense);
  // A dense target has no MTP layers to draft with.
  const std::string none = error_of(llama, "");
  CHECK(none.find("proposer.kind") != std::string::npos);
  CHECK(none.find(llama + " has none") != std::string::npos);
  // Not a GGUF file.
  const std::string text = dir + "/notes.txt";
  std::ofstream(text) << "not a model\n";
  const std::string unreadable = error_of(llama, text);
  CHECK(unreadable.find("cannot read " + text) != std::string::npos);
  // A missing file.
  CHECK(error_of(llama, dir + "/absent.gguf").find("cannot read") != std::string::npos);
  // No file at all: no target (as check-config may be given) and no model.
  try {
    parse_config("", "auto.toml", {"proposer.kind=auto"});
    FAIL("kind = auto with no file was accepted");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("needs a file") != std::string::npos);
  }
}
