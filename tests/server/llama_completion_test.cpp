// llama-server's /completion: its fields read as /v1/completions fields of the same meaning,
// sampler switches accepted only when off, what specd cannot honour refused by name, and the
// answer in llama-server's shape.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "server/llama_completion.hpp"
#include "server/request.hpp"

using namespace specd::server;
using nlohmann::json;

namespace {

json translated(const json& body) {
  return json::parse(llama_completion_request(body.dump()).openai_body);
}

std::string refused(const json& body) {
  try {
    llama_completion_request(body.dump());
  } catch (const RequestError& e) {
    CHECK(e.status == 400);
    return e.param;
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("/completion's fields: the same meaning, off switches, refusals by name") {
  // What llama.cpp's web UI sends with its defaults: every switch off.
  const json webui = {{"prompt", "Hi"},
                      {"n_predict", 16},
                      {"temperature", 0.8},
                      {"top_k", 40},
                      {"top_p", 0.95},
                      {"min_p", 0.05},
                      {"typical_p", 1},
                      {"repeat_penalty", 1.1},
                      {"repeat_last_n", 64},
                      {"presence_penalty", 0},
                      {"frequency_penalty", 0},
                      {"mirostat", 0},
                      {"mirostat_tau", 5},
                      {"mirostat_eta", 0.1},
                      {"dry_multiplier", 0},
                      {"dry_base", 1.75},
                      {"dry_allowed_length", 2},
                      {"dry_penalty_last_n", -1},
                      {"dry_sequence_breakers", {"\n", ":"}},
                      {"xtc_probability", 0},
                      {"xtc_threshold", 0.1},
                      {"dynatemp_range", 0},
                      {"dynatemp_exponent", 1},
                      {"top_n_sigma", -1},
                      {"n_probs", 0},
                      {"n_keep", 0},
                      {"stop", {"</s>"}},
                      {"cache_prompt", true},
                      {"id_slot", -1},
                      {"timings_per_token", false},
                      {"stream", true}};
  const json t = translated(webui);
  // The switches leave nothing behind; the rest passes as it is.
  for (const char* key : {"mirostat", "mirostat_tau", "dry_base", "xtc_threshold", "n_keep"})
    CHECK_FALSE(t.contains(key));
  for (const char* key : {"prompt", "n_predict", "top_k", "min_p", "repeat_penalty", "stop"})
    CHECK(t[key] == webui[key]);
  // The translation is an OpenAI request the completions reader accepts.
  const CompletionRequest r = parse_completion_request(t.dump(), false, specd::SamplingConfig{});
  CHECK(r.max_tokens == 16);
  CHECK(r.sampling.top_k == 40);

  // A switch turned on, or an unknown field, is refused by name.
  CHECK(refused({{"prompt", "x"}, {"mirostat", 2}}) == "mirostat");
  CHECK(refused({{"prompt", "x"}, {"dry_multiplier", 0.8}, {"dry_base", 2}}) == "dry_multiplier");
  CHECK(refused({{"prompt", "x"}, {"n_probs", 3}}) == "n_probs");
  CHECK(refused({{"prompt", "x"}, {"min_keep", 2}}) == "min_keep");
  CHECK(refused({{"prompt", "x"}, {"typical_p", 0.5}}) == "typical_p");
  CHECK(refused({{"prompt", "x"}, {"samplers", {"top_k"}}}) == "samplers");
  CHECK(refused({{"prompt", "x"}, {"image_data", json::array()}}) == "image_data");
  CHECK(refused({{"n_predict", 4}}) == "prompt");
  CHECK(refused({{"prompt", "x"}, {"logit_bias", {{15, false}}}}) == "logit_bias[0]");
  CHECK(refused({{"prompt", "x"}, {"logit_bias", json::array({json::array({"Hello", 1.0})})}}) ==
        "logit_bias[0]");
  CHECK(refused({{"prompt", "x"}, {"n_keep", "all"}}) == "n_keep");
  CHECK(refused({{"prompt", "x"}, {"top_n_sigma", 1.5}}) == "top_n_sigma");
  CHECK(refused({{"prompt", "x"}, {"t_max_predict_ms", -1}}) == "(accepted)");

  // logit_bias pairs become OpenAI's object; json_schema becomes response_format.
  json b = translated({{"prompt", "x"}, {"logit_bias", {{15, -2.5}, {7, 1}}}});
  CHECK(b["logit_bias"] == json({{"15", -2.5}, {"7", 1}}));
  b = translated({{"prompt", "x"}, {"json_schema", {{"type", "object"}}}});
  CHECK(b["response_format"]["type"] == "json_schema");
  CHECK(b["response_format"]["json_schema"]["schema"] == json({{"type", "object"}}));
  // seed -1: a random seed, within OpenAI's range.
  b = translated({{"prompt", "x"}, {"seed", -1}});
  CHECK(b["seed"].get<int64_t>() >= 0);
  CHECK(llama_completion_request(R"({"prompt":[1,2],"return_tokens":true})").return_tokens);
  // max_tokens is llama-server's alias of n_predict; ignore_eos means what it means there.
  b = translated({{"prompt", "x"}, {"max_tokens", 3}, {"ignore_eos", true}});
  const CompletionRequest ignoring =
      parse_completion_request(b.dump(), false, specd::SamplingConfig{});
  CHECK(ignoring.max_tokens == 3);
  CHECK(ignoring.sampling.ignore_eos);

  // Errors of the translated request speak of the /completion body's field.
  const RequestError e(400, "response_format.json_schema.schema.properties",
                       "response_format.json_schema.schema.properties: bad");
  const RequestError named = in_llama_names(e);
  CHECK(named.param == "json_schema.properties");
  CHECK(std::string(named.what()) == "json_schema.properties: bad");
}

TEST_CASE("/completion answers in llama-server's shape") {
  ResponseInfo info{"cmpl-1", "target", 0, false};
  info.prompt_tokens = 5;
  specd::GenerationResult result;
  result.text = "one\ntwo";
  result.tokens = {11, 12, 13};
  result.stop_reason = "stop";
  result.stop_string = "three";
  result.stats.prompt_tokens = 5;
  result.stats.prefill_s = 0.01;
  result.stats.generate_s = 0.03;
  result.stats.drafted = 6;
  result.stats.accepted = 4;
  json j = json::parse(llama_final_json(info, result, false, true));
  CHECK(j["content"] == "one\ntwo");
  CHECK(j["stop"] == true);
  CHECK(j["stop_type"] == "word");
  CHECK(j["stopping_word"] == "three");
  CHECK(j["tokens"] == json({11, 12, 13}));
  CHECK(j["tokens_predicted"] == 3);
  CHECK(j["tokens_evaluated"] == 5);
  CHECK(j["has_new_line"] == true);
  CHECK(j["model"] == "target");
  CHECK(j["timings"]["predicted_n"] == 3);
  CHECK(j["timings"]["predicted_ms"].get<double>() == doctest::Approx(30));
  CHECK(j["timings"]["predicted_per_second"].get<double>() == doctest::Approx(100));
  CHECK(j["timings"]["prompt_per_token_ms"].get<double>() == doctest::Approx(2));
  CHECK(j["timings"]["draft_n"] == 6);
  CHECK(j["timings"]["draft_n_accepted"] == 4);
  // Streamed, the last object carries no text (it went out in pieces) and no ids unless
  // asked for; eos and the length limit have their own stop types.
  result.stop_reason = "length";
  j = json::parse(llama_final_json(info, result, true, false));
  CHECK(j["content"] == "");
  CHECK(j["tokens"].empty());
  CHECK(j["stop_type"] == "limit");
  result.stop_reason = "eos";
  CHECK(json::parse(llama_final_json(info, result, true, false))["stop_type"] == "eos");
  const std::string piece = llama_chunk_event(info, "he");
  REQUIRE(piece.rfind("data: ", 0) == 0);
  j = json::parse(piece.substr(6));
  CHECK(j["content"] == "he");
  CHECK(j["stop"] == false);
}
