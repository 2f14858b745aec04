// Request validation: every malformed field is a 400 naming it; good requests keep the
// server's defaults for what they leave out.
#include <doctest/doctest.h>

#include <string>

#include "grammar/json_schema_grammar.hpp"
#include "server/request.hpp"

using namespace specd::server;

namespace {

specd::SamplingConfig defaults() {
  specd::SamplingConfig s;
  s.temperature = 0.0;
  s.max_tokens = 32;
  s.stop = {"\n\n"};
  return s;
}

// The param of the RequestError a body raises ("<none>" when it parses).
std::string refused(const std::string& body, bool chat = false, int* status = nullptr) {
  try {
    parse_completion_request(body, chat, defaults());
  } catch (const RequestError& e) {
    if (status) *status = e.status;
    // The message names the field it is about.
    if (!e.param.empty())
      CHECK_MESSAGE(std::string(e.what()).find(e.param) != std::string::npos, e.what());
    return e.param;
  }
  return "<none>";
}

}  // namespace

TEST_CASE("a minimal completion takes the server's defaults") {
  CompletionRequest r = parse_completion_request(R"({"prompt":"Hi"})", false, defaults());
  REQUIRE(r.prompts.size() == 1);
  CHECK(r.prompts[0].text == "Hi");
  CHECK_FALSE(r.prompts[0].is_ids);
  CHECK_FALSE(r.chat);
  CHECK(r.max_tokens == 32);
  CHECK(r.sampling.temperature == 0.0);
  CHECK(r.sampling.stop == std::vector<std::string>{"\n\n"});
  CHECK_FALSE(r.stream);
  CHECK_FALSE(r.seed.has_value());
  CHECK_FALSE(r.speculative.proposer.has_value());
}

TEST_CASE("every field is read") {
  CompletionRequest r = parse_completion_request(
      R"({"model":"m","prompt":"Hi","max_tokens":7,"temperature":0.7,"top_p":0.9,"top_k":40,
          "min_p":0.05,"stop":["a","b"],"seed":42,"n":1,"stream":true,
          "stream_options":{"include_usage":true},"user":"u",
          "speculative":{"proposer":"ngram","k":5,"rule":"exact-match","allow_lossy":false}})",
      false, defaults());
  CHECK(r.model == "m");
  CHECK(r.max_tokens == 7);
  CHECK(r.sampling.temperature == doctest::Approx(0.7));
  CHECK(r.sampling.top_p == doctest::Approx(0.9));
  CHECK(r.sampling.top_k == 40);
  CHECK(r.sampling.min_p == doctest::Approx(0.05));
  CHECK(r.sampling.stop == std::vector<std::string>{"a", "b"});
  CHECK(r.seed == 42u);
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.speculative.proposer == "ngram");
  CHECK(r.speculative.k == 5);
  CHECK(r.speculative.rule == "exact-match");
  CHECK_FALSE(r.speculative.allow_lossy);
  CHECK(parse_completion_request(R"({"prompt":"x","speculative":{"k":"auto"}})", false, defaults())
            .speculative.k_auto);
  CHECK(
      parse_completion_request(R"({"prompt":"x","stop":"END"})", false, defaults()).sampling.stop ==
      std::vector<std::string>{"END"});
  const CompletionRequest p = parse_completion_request(
      R"({"prompt":"x","presence_penalty":0.5,"frequency_penalty":-1.5,
          "logit_bias":{"7":-100,"300":2.5}})",
      false, defaults());
  CHECK(p.sampling.presence_penalty == doctest::Approx(0.5));
  CHECK(p.sampling.frequency_penalty == doctest::Approx(-1.5));
  CHECK(p.sampling.logit_bias == std::vector<std::pair<int32_t, float>>{{300, 2.5f}, {7, -100.f}});
}

TEST_CASE("structured output: response_format and grammar become the request's grammar") {
  const auto grammar_of = [](const std::string& body) {
    return parse_completion_request(body, true, defaults()).sampling.grammar;
  };
  const std::string chat = R"("messages":[{"role":"user","content":"hi"}])";
  CHECK(grammar_of("{" + chat + "}").empty());
  CHECK(grammar_of("{" + chat + R"(,"response_format":{"type":"text"}})").empty());
  CHECK(grammar_of("{" + chat + R"(,"response_format":{"type":"json_object"}})") ==
        specd::json_object_gbnf());
  const std::string g = grammar_of(
      "{" + chat +
      R"(,"response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,
          "schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}})");
  CHECK(g.find("root ::=") == 0);
  CHECK(grammar_of("{" + chat + R"(,"grammar":"root ::= \"yes\" | \"no\""})") ==
        "root ::= \"yes\" | \"no\"");
  specd::SamplingConfig configured = defaults();
  configured.grammar = "root ::= \"x\"";
  CHECK(parse_completion_request(R"({"prompt":"p"})", false, configured).sampling.grammar ==
        "root ::= \"x\"");
}

TEST_CASE("chat messages are read in order") {
  CompletionRequest r = parse_completion_request(
      R"({"messages":[{"role":"system","content":"S"},{"role":"user","content":"U"}],
          "max_completion_tokens":5})",
      true, defaults());
  REQUIRE(r.messages.size() == 2);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[1].content == "U");
  CHECK(r.max_tokens == 5);
  CompletionRequest parts = parse_completion_request(
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},
                                               {"type":"text","text":"b"}]}]})",
      true, defaults());
  CHECK(parts.messages[0].content == "ab");
}

TEST_CASE("malformed bodies are 400s") {
  int status = 0;
  CHECK(refused("{\"prompt\":", false, &status) == "");
  CHECK(status == 400);
  CHECK(refused("[1,2]") == "");
  CHECK(refused("") == "");
  CHECK(refused("\"text\"") == "");
}

// The message of the RequestError a body raises ("" when it parses).
std::string refusal(const std::string& body) {
  try {
    parse_completion_request(body, false, defaults());
  } catch (const RequestError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("malformed JSON says why and where; deep nesting is refused before parsing") {
  CHECK(refusal(R"({"prompt": tru})").find("not valid JSON: parse error at line 1, column") !=
        std::string::npos);
  CHECK(refusal("{\"prompt\": \"\xff\"}").find("invalid") != std::string::npos);
  CHECK(refusal(R"({"prompt": "x", "max_tokens": 1e400})").find("not valid JSON") !=
        std::string::npos);
  // 70 levels: refused by the scan, naming the limit and the byte (before: a tree was built).
  const std::string deep = "{\"prompt\":" + std::string(70, '[') + std::string(70, ']') + "}";
  CHECK(refusal(deep) == "the request body nests deeper than 64 levels (at byte 73)");
  // Brackets inside strings (escaped quotes too) are not nesting.
  const std::string text =
      R"({"prompt": "[[[[\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})";
  CHECK(refusal(text).empty());
}

TEST_CASE("each bad field is named") {
  CHECK(refused(R"({})") == "prompt");
  CHECK(refused(R"({"prompt":5})") == "prompt");
  CHECK(refused(R"({"prompt":[]})") == "prompt");
  CHECK(refused(R"({"prompt":["a",5]})") == "prompt[1]");
  CHECK(refused(R"({"prompt":["a",[]]})") == "prompt[1]");
  CHECK(refused(R"({"prompt":[1,-2]})") == "prompt[1]");
  CHECK(refused(R"({"prompt":[[1],[2,"x"]]})") == "prompt[1][1]");
  CHECK(refused(R"({"prompt":"x","bogus":1})") == "bogus");
  CHECK(refused(R"({"prompt":"x","messages":[]})") == "messages");  // chat's field
  CHECK(refused(R"({"prompt":"x","model":3})") == "model");
  CHECK(refused(R"({"prompt":"x","max_tokens":0})") == "max_tokens");
  CHECK(refused(R"({"prompt":"x","max_tokens":-3})") == "max_tokens");
  CHECK(refused(R"({"prompt":"x","max_tokens":1.5})") == "max_tokens");
  CHECK(refused(R"({"prompt":"x","max_tokens":"9"})") == "max_tokens");
  CHECK(refused(R"({"prompt":"x","max_tokens":1e30})") == "max_tokens");
  CHECK(refused(R"({"prompt":"x","temperature":-0.1})") == "temperature");
  CHECK(refused(R"({"prompt":"x","temperature":2.5})") == "temperature");
  CHECK(refused(R"({"prompt":"x","temperature":"hot"})") == "temperature");
  CHECK(refused(R"({"prompt":"x","temperature":1e-7})") == "temperature");  // was "prompt"
  CHECK(refused(R"({"prompt":"x","top_p":0})") == "top_p");
  CHECK(refused(R"({"prompt":"x","top_p":1.01})") == "top_p");
  CHECK(refused(R"({"prompt":"x","top_k":-2})") == "top_k");
  // vLLM's -1 is off, as 0.
  CHECK(parse_completion_request(R"({"prompt":"x","top_k":-1})", false, specd::SamplingConfig{})
            .sampling.top_k == 0);
  CHECK(refused(R"({"prompt":"x","top_k":true})") == "top_k");
  CHECK(parse_completion_request(R"({"prompt":"x","ignore_eos":true})", false,
                                 specd::SamplingConfig{})
            .sampling.ignore_eos);
  CHECK(refused(R"({"prompt":"x","ignore_eos":true,"grammar":"root ::= \"a\""})") == "ignore_eos");
  CHECK(refused(R"({"prompt":"x","min_p":1})") == "min_p");
  CHECK(refused(R"({"prompt":"x","stop":5})") == "stop");
  CHECK(refused(R"({"prompt":"x","stop":""})") == "stop");
  CHECK(refused(R"({"prompt":"x","stop":["a","b","c","d","e"]})") == "stop");
  CHECK(refused(R"({"prompt":"x","stop":["a",3]})") == "stop[1]");
  CHECK(refused(R"({"prompt":"x","seed":-1})") == "seed");
  CHECK(refused(R"({"prompt":"x","seed":"s"})") == "seed");
  CHECK(refused(R"({"prompt":"x","n":129})") == "n");
  CHECK(refused(R"({"prompt":"x","n":2})") == "<none>");
  CHECK(refused(R"({"prompt":"x","n":0})") == "n");
  CHECK(refused(R"({"prompt":"x","n":"1"})") == "n");
  CHECK(refused(R"({"prompt":"x","n":1})") == "<none>");
  CHECK(refused(R"({"prompt":"x","logprobs":21})") == "logprobs");
  CHECK(refused(R"({"prompt":"x","logprobs":true})") == "logprobs");
  CHECK(refused(R"({"prompt":"x","top_logprobs":2})") == "top_logprobs");  // chat's field
  CHECK(parse_completion_request(R"({"prompt":"x","logprobs":4})", false, defaults()).logprobs ==
        4);
  CHECK(parse_completion_request(R"({"prompt":"x"})", false, defaults()).logprobs == -1);
  CHECK(parse_completion_request(R"({"messages":[{"role":"user","content":"x"}],
                                     "logprobs":true,"top_logprobs":5})",
                                 true, defaults())
            .logprobs == 5);
  CHECK(refused(R"({"prompt":"x","presence_penalty":2.5})") == "presence_penalty");
  CHECK(refused(R"({"prompt":"x","frequency_penalty":"x"})") == "frequency_penalty");
  CHECK(refused(R"({"prompt":"x","repeat_penalty":0})") == "repeat_penalty");
  CHECK(refused(R"({"prompt":"x","repeat_penalty":1e-300})") == "repeat_penalty");
  CHECK(refused(R"({"prompt":"x","repeat_penalty":11})") == "repeat_penalty");
  CHECK(refused(R"({"prompt":"x","repeat_last_n":-2})") == "repeat_last_n");
  CHECK(parse_completion_request(R"({"prompt":"x","repeat_penalty":1.1,"repeat_last_n":-1})", false,
                                 defaults())
            .sampling.repeat_last_n == -1);
  CHECK(refused(R"({"prompt":"x","logit_bias":[1]})") == "logit_bias");
  CHECK(refused(R"({"prompt":"x","logit_bias":{"a":1}})") == "logit_bias");
  CHECK(refused(R"({"prompt":"x","logit_bias":{"-1":1}})") == "logit_bias");
  // One spelling per token: no sign, space or leading zero ("05" and "5" would both apply).
  for (const char* key : {" 5", "+5", "05", "5 ", "0x5", "2147483648", ""})
    CHECK(refused(std::string(R"({"prompt":"x","logit_bias":{")") + key + R"(":1}})") ==
          "logit_bias");
  CHECK(parse_completion_request(R"({"prompt":"x","logit_bias":{"0":1,"2147483647":2}})", false,
                                 defaults())
            .sampling.logit_bias.size() == 2);
  CHECK(refused(R"({"prompt":"x","logit_bias":{"5":101}})") == "logit_bias.5");
  CHECK(refused(R"({"prompt":"x","logit_bias":{"5":"up"}})") == "logit_bias.5");
  CHECK(refused(R"({"prompt":"x","grammar":"root ::= foo"})") == "grammar");
  CHECK(refused(R"({"prompt":"x","grammar":7})") == "grammar");
  CHECK(refused(R"({"prompt":"x","response_format":"json"})") == "response_format");
  CHECK(refused(R"({"prompt":"x","response_format":{}})") == "response_format.type");
  CHECK(refused(R"({"prompt":"x","response_format":{"type":"yaml"}})") == "response_format.type");
  CHECK(refused(R"({"prompt":"x","response_format":{"type":"json_schema"}})") ==
        "response_format.json_schema");
  CHECK(refused(R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":
        {"schema":{}}}})") == "response_format.json_schema.name");
  CHECK(refused(R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":
        {"name":"n","schema":{"type":"string","pattern":"a+"}}}})") ==
        "response_format.json_schema.schema");
  CHECK(refused(R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":
        {"name":"n","schema":{"type":"tuple"}}}})") == "response_format.json_schema.schema");
  CHECK(refused(R"({"prompt":"x","response_format":{"type":"json_object"},
        "grammar":"root ::= \"a\""})") == "grammar");
  CHECK(refused(R"({"prompt":"x","response_format":{"type":"text","extra":1}})") ==
        "response_format.extra");
  CHECK(refused(R"({"prompt":"x","stream":"yes"})") == "stream");
  CHECK(refused(R"({"prompt":"x","stream_options":{"x":1}})") == "stream_options.x");
  CHECK(refused(R"({"prompt":"x","stream_options":{"include_usage":1}})") ==
        "stream_options.include_usage");
  CHECK(refused(R"({"prompt":"x","speculative":3})") == "speculative");
  CHECK(refused(R"({"prompt":"x","speculative":{"kind":"ngram"}})") == "speculative.kind");
  CHECK(refused(R"({"prompt":"x","speculative":{"proposer":""}})") == "speculative.proposer");
  CHECK(refused(R"({"prompt":"x","speculative":{"k":0}})") == "speculative.k");
  CHECK(refused(R"({"prompt":"x","speculative":{"k":65}})") == "speculative.k");
  CHECK(refused(R"({"prompt":"x","speculative":{"k":"many"}})") == "speculative.k");
  CHECK(refused(R"({"prompt":"x","speculative":{"rule":7}})") == "speculative.rule");
  CHECK(refused(R"({"prompt":"x","speculative":{"allow_lossy":"yes"}})") ==
        "speculative.allow_lossy");
}

TEST_CASE("each bad chat field is named") {
  CHECK(refused(R"({})", true) == "messages");
  CHECK(refused(R"({"messages":"hi"})", true) == "messages");
  CHECK(refused(R"({"messages":[]})", true) == "messages");
  CHECK(refused(R"({"messages":[3]})", true) == "messages[0]");
  CHECK(refused(R"({"messages":[{"content":"x"}]})", true) == "messages[0].role");
  CHECK(refused(R"({"messages":[{"role":"user"}]})", true) == "messages[0].content");
  CHECK(refused(R"({"messages":[{"role":"user","content":"a"},{"role":"function","content":"b"}]})",
                true) == "messages[1].role");
  CHECK(refused(R"({"messages":[{"role":"user","content":[1]}]})", true) ==
        "messages[0].content[0]");
  CHECK(refused(R"({"messages":[{"role":"user","content":5}]})", true) == "messages[0].content");
  CHECK(refused(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", true) ==
        "messages[0].content[0].type");
  CHECK(refused(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", true) ==
        "messages[0].content[0].text");
  CHECK(refused(R"({"messages":[{"role":"user","content":"a","extra":1}]})", true) ==
        "messages[0].extra");
  CHECK(refused(R"({"messages":[{"role":"user","content":"a"}],"prompt":"x"})", true) == "prompt");
}

TEST_CASE("what llama-server's and vLLM's clients send is read exactly, or refused by name") {
  auto parse = [](const std::string& body, bool chat = false) {
    return parse_completion_request(body, chat, defaults());
  };
  // Prompts: a batch of strings, token ids, a batch of token ids.
  CompletionRequest batch = parse(R"({"prompt":["a","b","c"],"n":2})");
  REQUIRE(batch.prompts.size() == 3);
  CHECK(batch.prompts[2].text == "c");
  CHECK(batch.choices() == 6);
  CompletionRequest ids = parse(R"({"prompt":[5,6,7]})");
  REQUIRE(ids.prompts.size() == 1);
  CHECK(ids.prompts[0].is_ids);
  CHECK(ids.prompts[0].ids == std::vector<int32_t>{5, 6, 7});
  CHECK(parse(R"({"prompt":[[1,2],[3]]})").prompts.size() == 2);
  std::string many = R"({"prompt":["a")";
  for (int i = 0; i < 128; ++i) many += R"(,"a")";
  CHECK(refused(many + "]}") == "prompt");  // 129 prompts
  // n_predict is max_tokens (-1: until the context ends); both must agree.
  CHECK(parse(R"({"prompt":"x","n_predict":7})").max_tokens == 7);
  CHECK(parse(R"({"prompt":"x","n_predict":-1})").max_tokens == 1 << 24);
  CHECK(parse(R"({"prompt":"x","n_predict":7,"max_tokens":7})").max_tokens == 7);
  CHECK(refused(R"({"prompt":"x","n_predict":7,"max_tokens":8})") == "n_predict");
  CHECK(refused(R"({"prompt":"x","n_predict":0})") == "n_predict");
  CHECK(refused(R"({"prompt":"x","n_predict":-2})") == "n_predict");
  // repetition_penalty: llama.cpp's formula over the whole context, as vLLM applies it.
  CompletionRequest rep = parse(R"({"prompt":"x","repetition_penalty":1.3})");
  CHECK(rep.sampling.repeat_penalty == doctest::Approx(1.3));
  CHECK(rep.sampling.repeat_last_n == -1);
  CHECK(parse(R"({"prompt":"x","repetition_penalty":1.3,"repeat_last_n":16})")
            .sampling.repeat_last_n == 16);
  CHECK(refused(R"({"prompt":"x","repetition_penalty":1.3,"repeat_penalty":1.1})") ==
        "repetition_penalty");
  CHECK(refused(R"({"prompt":"x","repetition_penalty":0})") == "repetition_penalty");
  // min_tokens: at most max_tokens, never with a grammar.
  CHECK(parse(R"({"prompt":"x","min_tokens":5,"max_tokens":8})").sampling.min_tokens == 5);
  CHECK(refused(R"({"prompt":"x","min_tokens":9,"max_tokens":8})") == "min_tokens");
  CHECK(refused(R"({"prompt":"x","min_tokens":-1})") == "min_tokens");
  CHECK(refused(R"({"prompt":"x","min_tokens":2,"response_format":{"type":"json_object"}})") ==
        "min_tokens");
  // skip_special_tokens (default true) and llama-server's slot hints.
  CHECK_FALSE(parse(R"({"prompt":"x"})").sampling.render_special);
  CHECK(parse(R"({"prompt":"x","skip_special_tokens":false})").sampling.render_special);
  CHECK(refused(R"({"prompt":"x","skip_special_tokens":"no"})") == "skip_special_tokens");
  CHECK(refused(R"({"prompt":"x","cache_prompt":true,"id_slot":-1})") == "<none>");
  CHECK(refused(R"({"prompt":"x","cache_prompt":1})") == "cache_prompt");
  CHECK(refused(R"({"prompt":"x","id_slot":-2})") == "id_slot");
  // echo (completions only; not with logprobs) and continuous usage.
  CHECK(parse(R"({"prompt":"x","echo":true})").echo);
  CHECK(refused(R"({"prompt":"x","echo":true,"logprobs":2})") == "echo");
  CHECK(refused(R"({"messages":[{"role":"user","content":"a"}],"echo":true})", true) == "echo");
  CHECK(parse(R"({"prompt":"x","stream":true,
                  "stream_options":{"include_usage":true,"continuous_usage_stats":true}})")
            .continuous_usage);
  // best_of above 1 and images: refused saying so.
  CHECK(refused(R"({"prompt":"x","best_of":1})") == "<none>");
  try {
    parse(R"({"prompt":"x","best_of":3})");
    FAIL("best_of 3 accepted");
  } catch (const RequestError& e) {
    CHECK(e.param == "best_of");
    CHECK(std::string(e.what()).find("not supported") != std::string::npos);
  }
  try {
    parse(
        R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
        true);
    FAIL("an image accepted");
  } catch (const RequestError& e) {
    CHECK(e.param == "messages[0].content[0].type");
    CHECK(std::string(e.what()).find("not supported") != std::string::npos);
  }
  // The developer role is the system message.
  CompletionRequest dev = parse(
      R"({"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"a"}]})",
      true);
  CHECK(dev.messages[0].role == "system");
}
