// Array parameters (ABI 0.2): typed for plugins of minor >= 2, TOML text for minor 1.
#include <doctest/doctest.h>

#include <specd/cpp/host.hpp>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/plugin_params.hpp"

using specd::PluginParam;
using specd::PluginParams;
using specd::sdk::Params;

namespace {

const char* const kConfig = R"(
[target]
model = "t.gguf"
[proposer]
kind = "medusa"
choices = [[0], [0, 1], [2]]
ints = [3, -4]
numbers = [1, 2.5]
names = ["a", "b\u00e9"]
flags = [true, false]
empty = []
mixed = [1, "a"]
tables = [{a = 1}]
ragged = [[1], ["x"]]
)";

std::vector<PluginParam> proposer_params(const std::vector<std::string>& overrides = {}) {
  return specd::parse_config(kConfig, "t.toml", overrides).proposer.params;
}

const specd_param& item(const specd_params& params, const std::string& key) {
  for (uint32_t i = 0; i < params.count; ++i)
    if (key == params.items[i].key) return params.items[i];
  FAIL("no key " << key);
  return params.items[0];
}

std::string error_of(const auto& body) {
  try {
    body();
  } catch (const specd::sdk::PluginError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("arrays of one kind reach an ABI 0.2 plugin typed") {
  const auto config = proposer_params();
  PluginParams host(config, 2);
  const specd_params& raw = *host.raw();
  REQUIRE(SPECD_PARAMS_HAS(&raw, arrays));
  Params params(&raw);

  CHECK(params.get_int_lists("choices", {}) == std::vector<std::vector<int64_t>>{{0}, {0, 1}, {2}});
  CHECK(params.get_ints("ints", {}) == std::vector<int64_t>{3, -4});
  CHECK(params.get_floats("ints", {}) == std::vector<double>{3.0, -4.0});
  CHECK(params.get_floats("numbers", {}) == std::vector<double>{1.0, 2.5});
  CHECK(params.get_strings("names", {}) == std::vector<std::string>{"a", "b\xc3\xa9"});
  CHECK(params.get_ints("empty", {7}).empty());
  CHECK(params.get_int_lists("empty", {{1}}).empty());
  CHECK(params.get_ints("absent", {7}) == std::vector<int64_t>{7});

  const specd_param& flags = item(raw, "flags");
  CHECK(flags.type == SPECD_PARAM_ARRAY);
  const specd_param_array& bools = *raw.arrays[&flags - raw.items];
  CHECK(bools.element_type == SPECD_PARAM_BOOL);
  REQUIRE(bools.count == 2);
  CHECK(bools.bools[0] == 1);
  CHECK(bools.bools[1] == 0);
  CHECK(bools.ints == nullptr);
  CHECK(bools.struct_size == sizeof(specd_param_array));

  // The TOML text stays in string_value, for messages.
  CHECK(std::string(item(raw, "choices").string_value) == "[ [ 0 ], [ 0, 1 ], [ 2 ] ]");
  // Scalars have no array value.
  CHECK(raw.arrays[&item(raw, "mixed") - raw.items] == nullptr);
}

TEST_CASE("arrays of mixed kinds or of tables stay TOML text") {
  const auto config = proposer_params();
  PluginParams host(config, 2);
  const specd_params& raw = *host.raw();
  for (const char* key : {"mixed", "tables"}) {
    CAPTURE(key);
    const specd_param& p = item(raw, key);
    CHECK(p.type == SPECD_PARAM_STRING);
    CHECK(raw.arrays[&p - raw.items] == nullptr);
  }
  CHECK(std::string(item(raw, "mixed").string_value) == "[ 1, 'a' ]");
  // ragged is an array of arrays, each typed itself ([1] integers, ["x"] strings).
  CHECK(item(raw, "ragged").type == SPECD_PARAM_ARRAY);
  Params params(&raw);
  CHECK(error_of([&] {
          params.get_int_lists("ragged", {});
        }).find("t.toml:14:10: key 'ragged' must be an array of integer arrays") == 0);
}

TEST_CASE("wrong kinds are refused naming the key and where it is") {
  const auto config = proposer_params();
  PluginParams host(config, 2);
  Params params(host.raw());
  CHECK(error_of([&] { params.get_ints("names", {}); }) ==
        "t.toml:9:9: key 'names' must be an array of integers, e.g. [1, 2]");
  CHECK(error_of([&] { params.get_ints("numbers", {}); }) ==
        "t.toml:8:11: key 'numbers' must be an array of integers, e.g. [1, 2]");
  CHECK(error_of([&] { params.get_int_lists("ints", {}); }) ==
        "t.toml:7:8: key 'ints' must be an array of integer arrays, e.g. [[0], [0, 1]]");
  CHECK(error_of([&] { params.get_strings("mixed", {}); }) ==
        "t.toml:12:9: key 'mixed' must be an array of strings, e.g. [\"a\", \"b\"]");
  // A nested list with a string inside.
  const auto bad = proposer_params({"proposer.choices=[[0], [1, \"x\"]]"});
  PluginParams bad_host(bad, 2);
  Params bad_params(bad_host.raw());
  CHECK(error_of([&] { bad_params.get_int_lists("choices", {}); }) ==
        "--set proposer.choices: key 'choices' must be an array of integer arrays, e.g. [[0], "
        "[0, 1]]");
}

TEST_CASE("an ABI 0.1 plugin receives every array as its TOML text") {
  const auto config = proposer_params();
  PluginParams host(config, 1);
  const specd_params& raw = *host.raw();
  for (uint32_t i = 0; i < raw.count; ++i) CHECK(raw.items[i].type != SPECD_PARAM_ARRAY);
  const specd_param& choices = item(raw, "choices");
  CHECK(choices.type == SPECD_PARAM_STRING);
  CHECK(std::string(choices.string_value) == "[ [ 0 ], [ 0, 1 ], [ 2 ] ]");
  CHECK(std::string(choices.location) == "t.toml:6:11");
  // The 0.2 accessors, given such a table, say what they need.
  Params params(&raw);
  CHECK(error_of([&] { params.get_int_lists("choices", {}); }) ==
        "t.toml:6:11: key 'choices' must be an array of integer arrays, e.g. [[0], [0, 1]]");
}

TEST_CASE("a host of ABI 0.1 (no arrays field) is read safely") {
  const specd_param p{sizeof(specd_param), "choices", SPECD_PARAM_STRING, 0, 0, 0, "[[0]]", "x"};
  // specd_params as ABI 0.1 laid it out: struct_size ends before `arrays`.
  specd_params old{static_cast<uint32_t>(offsetof(specd_params, arrays)), 1, &p, nullptr};
  CHECK_FALSE(SPECD_PARAMS_HAS(&old, arrays));
  Params params(&old);
  CHECK(error_of([&] { params.get_ints("choices", {}); }) ==
        "x: key 'choices' must be an array of integers, e.g. [1, 2]");
}
