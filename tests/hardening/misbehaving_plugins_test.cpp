// Plugins that break their contract: the engine refuses what they return with a
// specd::Error naming the plugin, the request fails cleanly, and a fresh engine in the same
// process goes on working. The plugins are built into a test-only folder
// (SPECD_HARDENING_PLUGINS) so that they never show up in a user's plugin list.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine/plugin_checks.hpp"
#include "gguf/gguf_reader.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

struct Fixture {
  std::string dir = test::temp_dir("hardening-plugins");
  std::string model = dir + "/random.gguf";
  PluginRegistry registry{{SPECD_HARDENING_PLUGINS}};
  Fixture() { test::write_random_llama(model, {}); }

  Config config(const std::vector<std::string>& overrides) const {
    std::vector<std::string> all = {
        "target.model=\"" + model + "\"", "engine.backend=cpu",       "engine.threads=1",
        "sampling.temperature=0",         "sampling.ignore_eos=true", "sampling.max_tokens=4"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    return parse_config("", "hardening.toml", all);
  }

  // A well-behaved request after a failure: the process state is intact.
  void check_still_works(const std::vector<std::string>& overrides) const {
    Engine engine(config(overrides), registry);
    GenerationResult out = engine.generate("hello");
    CHECK(out.tokens.size() == 4);
  }
};

// Runs one request that must fail with specd::Error (not a crash, not UsageError: the
// configuration was fine, the plugin's output was not) whose message holds every needle.
void expect_request_error(const Fixture& f, const std::vector<std::string>& overrides,
                          const std::vector<std::string>& needles) {
  std::string message;
  bool usage = false;
  try {
    Engine engine(f.config(overrides), f.registry);
    engine.generate("hello");
  } catch (const UsageError& e) {
    usage = true;
    message = e.what();
  } catch (const Error& e) {
    message = e.what();
  }
  INFO("message: " << message);
  CHECK_FALSE(usage);
  REQUIRE_FALSE(message.empty());
  for (const std::string& needle : needles) CHECK(message.find(needle) != std::string::npos);
}

struct Case {
  const char* mode;
  std::vector<std::string> needles;
};

}  // namespace

TEST_CASE("a proposer breaking the draft-tree contract is refused, naming it") {
  Fixture f;
  const Case cases[] = {
      {"parent-out-of-range", {"bad-proposer", "parent 7"}},
      {"parent-negative", {"bad-proposer", "parent -1"}},
      {"token-too-large", {"bad-proposer", "outside the vocabulary"}},
      {"token-negative", {"bad-proposer", "token -5"}},
      {"q-not-normalised", {"bad-proposer", "q row 1", "sums to"}},
      {"q-nan", {"bad-proposer", "q row 0", "finite"}},
      {"too-many-nodes", {"bad-proposer", "room for"}},
      {"duplicate-siblings", {"bad-proposer", "same token", "without-replacement"}},
      {"unknown-scheme", {"bad-proposer", "unknown sibling scheme"}},
      {"sampled-without-q", {"bad-proposer", "gives no q"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.mode);
    expect_request_error(
        f,
        {"proposer.kind=bad-proposer", "proposer.k=2",
         std::string("proposer.mode=\"") + c.mode + "\"", "acceptance.rule=greedy"},
        c.needles);
  }
  // q from a proposer that never declared SPECD_PROPOSER_PROVIDES_Q (it got no q buffer).
  expect_request_error(f,
                       {"proposer.kind=bad-proposer-noq", "proposer.k=2",
                        "proposer.mode=\"undeclared-q\"", "acceptance.rule=greedy"},
                       {"bad-proposer-noq", "without declaring SPECD_PROPOSER_PROVIDES_Q"});
  f.check_still_works({"proposer.kind=bad-proposer", "proposer.k=2", "acceptance.rule=greedy"});
  f.check_still_works({});
}

TEST_CASE("an acceptance rule returning a result outside its contract is refused, naming it") {
  Fixture f;
  const Case cases[] = {
      {"node-not-in-tree", {"bad-rule", "not a node of the tree"}},
      {"node-zero", {"bad-rule", "not a node of the tree"}},
      {"not-a-chain", {"bad-rule", "its parent is"}},
      {"too-long", {"bad-rule", "path"}},
      {"overrun", {"bad-rule", "path"}},
      {"next-token-too-large", {"bad-rule", "next token", "outside the vocabulary"}},
      {"next-token-negative", {"bad-rule", "next token -1"}},
      {"fail", {"bad-rule", "asked to fail"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.mode);
    expect_request_error(f,
                         {"proposer.kind=bad-proposer", "proposer.k=2", "acceptance.rule=bad-rule",
                          std::string("acceptance.mode=\"") + c.mode + "\""},
                         c.needles);
  }
  f.check_still_works({"proposer.kind=bad-proposer", "proposer.k=2", "acceptance.rule=bad-rule"});
  f.check_still_works({});
}

TEST_CASE("a backend whose allocations fail gives a clean error naming it") {
  Fixture f;
  expect_request_error(
      f, {"engine.backend=oom"},
      {"backend 'oom' (org.specd.test.backend.oom)", "buffer_alloc", "cannot allocate"});
  f.check_still_works({});
}

// A status a proposer returns while drafting is a runtime failure of that request, whatever
// code it carries; INVALID_ARGUMENT must not turn it into a usage error (exit 2, "fix your
// configuration"). Acceptance rules are treated the same way (AcceptanceRule::accept).
TEST_CASE("a proposer failing to draft fails the request with a runtime error") {
  Fixture f;
  expect_request_error(f,
                       {"proposer.kind=bad-proposer", "proposer.k=2", "proposer.mode=\"fail\"",
                        "acceptance.rule=greedy"},
                       {"bad-proposer", "asked to fail"});
  f.check_still_works({});
}

// check-config creates the proposer with the setup run gives it (engine/plugin_checks.hpp
// proposer_setup): the output's vocabulary with its padding rows (a target whose tokenizer
// lists 258 of its 264 rows: 6 ids without text), the hidden width, the batch-invariant
// draft nodes.
TEST_CASE("check-config gives a proposer the same setup as run") {
  Fixture f;
  const std::string padded = f.dir + "/padded-output.gguf";
  {
    const GgufFile file = GgufFile::open(f.model);
    GgufWriter w;
    for (const auto& [key, value] : file.metadata())
      if (key != "general.alignment") w.set(key, value);
    w.set_alignment(file.alignment());
    for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"}) {
      std::vector<GgufValue> items = file.get_array(key).elements();
      REQUIRE(items.size() == 264);
      items.resize(258);
      w.set(key, GgufValue::make_array(items.front().type, items));
    }
    for (const GgufTensor& t : file.tensors()) {
      const auto* bytes = static_cast<const uint8_t*>(t.data);
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                   std::vector<uint8_t>(bytes, bytes + t.n_bytes));
    }
    w.write(padded);
  }
  const Config config = f.config({"target.model=\"" + padded + "\"", "proposer.kind=bad-proposer",
                                  "proposer.k=3", "proposer.mode=\"report-setup\""});
  auto refusal = [](const std::function<void()>& make) {
    try {
      make();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  const std::string checked = refusal([&] { check_config_plugins(config, f.registry); });
  const std::string ran = refusal([&] { Engine engine(config, f.registry); });
  INFO("check-config: " << checked);
  INFO("run: " << ran);
  CHECK(checked.find("setup: vocab_size 264, empty texts 6, hidden_dim 64, max_nodes 63, "
                     "draft_length 3, target " +
                     padded) != std::string::npos);
  CHECK(checked == ran);
}
