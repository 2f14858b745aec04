// The TOML configuration: every problem reported at once as file:line:col: message.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "config/config.hpp"
#include "config/did_you_mean.hpp"
#include "config/toml_text.hpp"

using specd::parse_config;

namespace {

// The message of the UsageError that parsing `text` throws ("" if none is thrown).
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(text, "t.toml", overrides);
  } catch (const specd::UsageError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a complete configuration is read with its defaults") {
  auto c = parse_config(R"(
[engine]
backend = "cpu"
threads = 2
seed = 7
[target]
model = "target.gguf"
[proposer]
kind = "draft-model"
model = "draft.gguf"
k = 5
branching = [2, 1]
[acceptance]
rule = "typical"
allow_lossy = true
epsilon = 0.1
[sampling]
temperature = 0.7
top_k = 40
top_p = 0.95
min_p = 0.05
max_tokens = 64
stop = ["\n\n"]
[plugins]
paths = ["/opt/plugins"]
)",
                        "t.toml");
  CHECK(c.engine.backend == "cpu");
  CHECK(c.engine.threads == 2);
  CHECK(c.engine.seed == 7);
  CHECK(c.target.model == "target.gguf");
  CHECK(c.proposer.kind == "draft-model");
  CHECK(c.proposer.k == 5);
  REQUIRE(c.proposer.params.size() == 1);
  CHECK(c.proposer.params[0].key == "branching");
  CHECK(c.proposer.params[0].string_value == "[ 2, 1 ]");
  CHECK(c.acceptance.rule == "typical");
  CHECK(c.acceptance.allow_lossy);
  REQUIRE(c.acceptance.params.size() == 1);
  CHECK(c.acceptance.params[0].key == "epsilon");
  CHECK(c.acceptance.params[0].float_value == doctest::Approx(0.1));
  CHECK(c.acceptance.params[0].location == "t.toml:16:11");
  CHECK(c.sampling.temperature == doctest::Approx(0.7));
  CHECK(c.sampling.top_k == 40);
  CHECK(c.sampling.stop == std::vector<std::string>{"\n\n"});
  CHECK(c.plugins.paths == std::vector<std::string>{"/opt/plugins"});
  CHECK(c.where("engine.threads") == "t.toml:4:11");
}

TEST_CASE("all problems at once, in file order, with did-you-mean") {
  std::string e = error_of(R"([engine]
threads = "two"
temprature = 1
[sampling]
temperature = -0.5
top_p = 0
min_p = 1.5
max_tokens = 0
[proposer]
k = 0
[samplin]
)");
  CHECK(contains(e, "t.toml:2:11: 'threads' must be an integer, not a string"));
  CHECK(contains(e, "t.toml:3:1: unknown key 'temprature' in [engine]"));
  CHECK(contains(e,
                 "t.toml:5:15: 'temperature' = -0.5 is out of range (0 = greedy, else a finite "
                 "number >= 1e-06)"));
  CHECK(contains(e, "t.toml:6:9: 'top_p' = 0 is out of range (0 < top_p <= 1; 1 = off)"));
  CHECK(contains(e, "t.toml:7:9: 'min_p' = 1.5 is out of range"));
  CHECK(contains(e, "t.toml:8:14: 'max_tokens' = 0 is out of range (>= 1)"));
  CHECK(contains(e, "t.toml:10:5: 'k' = 0 is out of range (k >= 1, at most 64)"));
  CHECK(contains(e, "t.toml:11:2: unknown section 'samplin' (did you mean 'sampling'?)"));
  CHECK(e.find(":2:11:") < e.find(":3:1:"));
  CHECK(e.find(":3:1:") < e.find(":11:2:"));
}

TEST_CASE("TOML syntax errors give file:line:col") {
  std::string e = error_of("[engine]\nthreads = = 2\n");
  CHECK(contains(e, "t.toml:2:"));
}

TEST_CASE("--set overrides any key, checked like the file") {
  auto c = parse_config("[sampling]\ntemperature = 1.0\n", "t.toml",
                        {"sampling.temperature=0", "proposer.kind=ngram", "proposer.k=3",
                         "target.model=m.gguf", "proposer.n=2"});
  CHECK(c.sampling.temperature == 0);
  CHECK(c.proposer.kind == "ngram");
  CHECK(c.proposer.k == 3);
  CHECK(c.target.model == "m.gguf");
  REQUIRE(c.proposer.params.size() == 1);
  CHECK(c.proposer.params[0].location == "--set proposer.n");
  std::string e = error_of("", {"sampling.top_p=2", "engine.colour=red", "nodot"});
  CHECK(contains(e, "--set sampling.top_p: 'top_p' = 2 is out of range"));
  CHECK(contains(e, "unknown key 'colour' in [engine]"));
  CHECK(contains(e, "--set nodot: expected section.key=value"));
}

TEST_CASE("proposer kind none drops the other proposer keys") {
  auto c =
      parse_config("[proposer]\nkind = \"eagle\"\ndepth = 5\n", "t.toml", {"proposer.kind=none"});
  CHECK(c.proposer.kind == "none");
  CHECK(c.proposer.params.empty());
}

TEST_CASE("[verifier]: the built-in by default, a plugin's keys passed on, none for the built-in") {
  CHECK(parse_config("", "t.toml").verifier.kind == "target");
  auto c = parse_config("[verifier]\nkind = \"remote\"\nurl = \"http://h:1\"\ntimeout_s = 2\n",
                        "t.toml");
  CHECK(c.verifier.kind == "remote");
  REQUIRE(c.verifier.params.size() == 2);
  const specd::PluginParam& url = c.verifier.params[c.verifier.params[0].key == "url" ? 0 : 1];
  CHECK(url.key == "url");
  CHECK(url.string_value == "http://h:1");
  CHECK(url.location == "t.toml:3:7");
  CHECK(c.where("verifier.kind") == "t.toml:2:8");
  CHECK(contains(error_of("[verifier]\nurl = \"http://h:1\"\n"),
                 "t.toml:2:7: unknown key 'url' in [verifier]: the built-in target verifier"));
  CHECK(contains(error_of("[verifier]\nkind = 3\n"), "t.toml:2:8:"));
  CHECK(contains(error_of("[server]\nverify_sessions = -1\n"), "t.toml:2:19:"));
  CHECK(contains(error_of("[server]\nverify_idle_s = 0.5\n"), "1 to 86400 seconds"));
}

TEST_CASE("k = \"auto\"") {
  auto c = parse_config("[proposer]\nk = \"auto\"\n", "t.toml");
  CHECK(c.proposer.k_auto);
  CHECK(contains(error_of("[proposer]\nk = \"many\"\n"), "t.toml:2:5: 'k' must be an integer"));
}

TEST_CASE("KV cache types") {
  auto c = parse_config("[engine]\nkv_type = \"q8_0\"\n[proposer]\nkv_type = \"f16\"\n", "t.toml");
  CHECK(c.engine.kv_type == "q8_0");
  CHECK(c.proposer.kv_type == "f16");
  CHECK(contains(error_of("[target]\nkv_type = \"q4_0\"\n"),
                 "t.toml:2:11: 'kv_type' must be \"f32\", \"f16\" or \"q8_0\", not 'q4_0'"));
}

TEST_CASE("[sampling] grammar, grammar_file and json_schema_file") {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("specd-config-grammar-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  auto c = parse_config("[sampling]\ngrammar = 'root ::= \"a\"+'\n", "t.toml");
  CHECK(c.sampling.grammar == "root ::= \"a\"+");
  CHECK(contains(error_of("[sampling]\ngrammar = 'root ::= b'\n"),
                 "grammar: line 1, column 10: rule 'b' is not defined"));
  const std::string gbnf = write("g.gbnf", "root ::= [0-9]+\n");
  c = parse_config("[sampling]\ngrammar_file = '" + gbnf + "'\n", "t.toml");
  CHECK(c.sampling.grammar == "root ::= [0-9]+\n");
  const std::string broken = write("broken.gbnf", "root ::= x\n\nx ::= (\"a\"\n");
  CHECK(error_of("[sampling]\ngrammar_file = '" + broken + "'\n") ==
        broken + ": grammar: line 3, column 7: the group is not closed");
  CHECK(contains(error_of("[sampling]\ngrammar_file = '" + dir + "/none.gbnf'\n"), "none.gbnf"));
  const std::string schema =
      write("s.json", R"({"type": "object", "properties": {"a": {"type": "boolean"}}})");
  c = parse_config("[sampling]\njson_schema_file = '" + schema + "'\n", "t.toml");
  CHECK(c.sampling.grammar.rfind("root ::= ", 0) == 0);
  const std::string not_json = write("bad.json", "{\"type\": ");
  CHECK(contains(error_of("[sampling]\njson_schema_file = '" + not_json + "'\n"),
                 not_json + ": the file is not valid JSON"));
  const std::string unsupported = write("u.json", R"({"type": "string", "format": "email"})");
  CHECK(error_of("[sampling]\njson_schema_file = '" + unsupported + "'\n")
            .rfind(unsupported + ": schema: the keyword \"format\" is not supported", 0) == 0);
  CHECK(
      contains(error_of("[sampling]\ngrammar = 'root ::= \"a\"'\ngrammar_file = '" + gbnf + "'\n"),
               "give one of [sampling] grammar, grammar_file and json_schema_file"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("--set integers beyond 64 bits are out of range, not strings") {
  CHECK(contains(error_of("", {"engine.seed=18446744073709551615"}),
                 "'seed' = 18446744073709551615 is out of range (>= 0)"));
  CHECK(contains(error_of("", {"engine.context=-99999999999999999999"}),
                 "'context' = -99999999999999999999 is out of range"));
  CHECK(contains(error_of("", {"engine.seed=12abc"}), "'seed' must be an integer, not a string"));
}

TEST_CASE("missing target model for run") {
  auto c = parse_config("", "t.toml");
  CHECK_THROWS_WITH_AS(specd::check_required_for_run(c),
                       doctest::Contains("missing required key 'model' in [target]"),
                       specd::UsageError);
}

TEST_CASE("did_you_mean") {
  CHECK(specd::did_you_mean("temprature", {"temperature", "top_k"}) == "temperature");
  CHECK(specd::did_you_mean("zzzzzz", {"temperature", "top_k"}).empty());
}

TEST_CASE("TOML nesting is bounded and dots or brackets in strings are not nesting") {
  using specd::find_deep_nesting;
  CHECK(find_deep_nesting("a.b.c = 1\n[x.y]\nz = [[1], {a.b = 2}]\n").line == 0);
  std::string deep_key;
  for (int i = 0; i < 129; ++i) deep_key += "a.";
  deep_key += "a = 1\n";
  CHECK(find_deep_nesting(deep_key).line == 1);
  CHECK(find_deep_nesting("x = 1\n" + deep_key).line == 2);
  // The same inside strings (basic, literal, multi-line) and comments is not nesting.
  const std::string quoted_texts[] = {
      std::string(1, '"') + deep_key.substr(0, 258) + '"',
      std::string(1, '\'') + deep_key.substr(0, 258) + '\'',
      std::string(3, '"') + '\n' + std::string(300, '[') + std::string(3, '"')};
  for (const std::string& quoted : quoted_texts) {
    CAPTURE(quoted);
    std::string text = "k = ";
    text += quoted + "\n# " + std::string(300, '{') + "\n";
    CHECK(find_deep_nesting(text).line == 0);
  }
  // The key is one level, each array one more.
  std::string arrays = "x = ", too_deep = "x = ";
  arrays += std::string(127, '[') + std::string(127, ']');
  too_deep += std::string(128, '[') + std::string(128, ']');
  CHECK(find_deep_nesting(arrays).line == 0);
  CHECK(find_deep_nesting(too_deep).line == 1);
}
