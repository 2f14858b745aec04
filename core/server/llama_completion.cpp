#include "server/llama_completion.hpp"

#include <cstdint>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "server/json_body.hpp"
#include "server/request.hpp"
#include "server/request_fields.hpp"
#include "server/sampler_switches.hpp"

namespace specd::server {
namespace {

using nlohmann::json;

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Fields of the same name and meaning in /v1/completions.
const std::set<std::string> kSameMeaning = {"prompt",
                                            "n_predict",
                                            "temperature",
                                            "top_k",
                                            "top_p",
                                            "min_p",
                                            "seed",
                                            "stop",
                                            "stream",
                                            "presence_penalty",
                                            "frequency_penalty",
                                            "repeat_penalty",
                                            "repeat_last_n",
                                            "grammar",
                                            "cache_prompt",
                                            "id_slot",
                                            "model",
                                            "speculative",
                                            "cache_salt",
                                            "min_tokens",
                                            "max_tokens",
                                            "ignore_eos"};

// llama-server's logit_bias: an object as OpenAI's, or [[token id, bias], ...].
json logit_bias(const json& v) {
  if (!v.is_array()) return v;  // the OpenAI reader checks it
  json out = json::object();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = "logit_bias[" + std::to_string(i) + "]";
    const json& pair = v[i];
    if (!pair.is_array() || pair.size() != 2) bad(p, "must be a [token id, bias] pair");
    if (!pair[0].is_number_integer())
      bad(p, "names its token by id here (token strings are not supported)");
    if (pair[1].is_boolean())
      bad(p, "false (never this token) is not supported: a bias of -100 all but bans it");
    out[std::to_string(pair[0].get<int64_t>())] = pair[1];
  }
  return out;
}

}  // namespace

LlamaCompletion llama_completion_request(std::string_view body) {
  json j = parse_json_body(body);
  if (!j.is_object())
    throw RequestError(400, "",
                       std::string("the request body must be a JSON object, not ") + kind_of(j));
  drop_switches_left_off(j);
  LlamaCompletion out;
  json openai = json::object();
  for (const auto& [key, value] : j.items()) {
    if (key == "seed" && value.is_number_integer() && value.get<int64_t>() == -1) {
      // llama-server's -1: a random seed for this request (kept within OpenAI's >= 0).
      std::random_device rd;
      openai[key] = (uint64_t(rd()) << 32 | rd()) >> 1;
    } else if (kSameMeaning.count(key)) {
      openai[key] = value;
    } else if (key == "logit_bias") {
      openai[key] = logit_bias(value);
    } else if (key == "json_schema") {
      if (!value.is_null())
        openai["response_format"] = {{"type", "json_schema"},
                                     {"json_schema", {{"name", "schema"}, {"schema", value}}}};
    } else if (key == "return_tokens") {
      out.return_tokens = boolean(key, value);
    } else if (key == "n_keep") {
      // Tokens kept when the context shifts: specd never shifts (it stops at the end).
      integer(key, value, -1, 1 << 24, "-1 to 16777216");
    } else if (key == "image_data" || key == "multimodal_data") {
      bad(key, "images are not supported: this server serves a text-only model");
    } else {
      bad(key, "is not a field specd's /completion accepts (docs/SERVER.md lists them)");
    }
  }
  if (!openai.contains("prompt")) bad("prompt", "is required");
  out.openai_body = dump(openai);
  return out;
}

RequestError in_llama_names(const RequestError& error) {
  static const std::string kRead = "response_format.json_schema.schema";
  auto renamed = [](std::string s) {
    for (size_t at = s.find(kRead); at != std::string::npos; at = s.find(kRead, at))
      s.replace(at, kRead.size(), "json_schema");
    return s;
  };
  return RequestError(error.status, renamed(error.param), renamed(error.what()), error.code);
}

std::string llama_chunk_event(const ResponseInfo& info, const std::string& text) {
  const json j = {{"index", info.index},
                  {"content", text},
                  {"tokens", json::array()},
                  {"stop", false},
                  {"id_slot", 0},
                  {"tokens_predicted", info.completion_tokens},
                  {"tokens_evaluated", info.prompt_tokens}};
  return "data: " + dump(j) + "\n\n";
}

std::string llama_final_json(const ResponseInfo& info, const GenerationResult& result,
                             bool streamed, bool return_tokens) {
  const GenerationStats& s = result.stats;
  const std::string& why = result.stop_reason;
  const char* stop_type = why == "eos" ? "eos" : why == "stop" ? "word" : "limit";
  const double prompt_ms = s.prefill_s * 1e3, predicted_ms = s.generate_s * 1e3;
  const uint64_t predicted = result.tokens.size();
  auto per_token = [](double ms, uint64_t n) { return n ? ms / double(n) : 0.0; };
  auto per_second = [](double ms, uint64_t n) { return ms > 0 ? 1e3 * double(n) / ms : 0.0; };
  json timings = {{"prompt_n", s.prompt_tokens},
                  {"prompt_ms", prompt_ms},
                  {"prompt_per_token_ms", per_token(prompt_ms, s.prompt_tokens)},
                  {"prompt_per_second", per_second(prompt_ms, s.prompt_tokens)},
                  {"predicted_n", predicted},
                  {"predicted_ms", predicted_ms},
                  {"predicted_per_token_ms", per_token(predicted_ms, predicted)},
                  {"predicted_per_second", per_second(predicted_ms, predicted)},
                  {"draft_n", s.drafted},
                  {"draft_n_accepted", s.accepted}};
  json tokens = json::array();
  if (return_tokens) tokens = result.tokens;
  const json j = {{"index", info.index},
                  {"content", streamed ? std::string() : result.text},
                  {"tokens", tokens},
                  {"id_slot", 0},
                  {"stop", true},
                  {"model", info.model},
                  {"tokens_predicted", predicted},
                  {"tokens_evaluated", info.prompt_tokens},
                  {"has_new_line", result.text.find('\n') != std::string::npos},
                  {"truncated", false},
                  {"stop_type", stop_type},
                  {"stopping_word", result.stop_string},
                  {"tokens_cached", info.prompt_tokens + predicted},
                  {"timings", timings}};
  return dump(j);
}

}  // namespace specd::server
