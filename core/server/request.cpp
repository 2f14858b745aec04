#include "server/request.hpp"

#include "grammar/gbnf_grammar.hpp"
#include "grammar/json_schema_grammar.hpp"
#include "sampling/sampling_ranges.hpp"
#include "server/cache_salt.hpp"
#include "server/json_body.hpp"
#include "server/request_fields.hpp"
#include "server/sampler_switches.hpp"
#include "server/tool_request.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <set>

namespace specd::server {
namespace {

using nlohmann::json;

std::vector<std::string> stops(const json& v) {
  if (v.is_null()) return {};
  if (v.is_string()) {
    if (v.get<std::string>().empty()) bad("stop", "must not be an empty string");
    return {v.get<std::string>()};
  }
  if (!v.is_array()) bad("stop", std::string("must be a string or an array, not ") + kind_of(v));
  if (v.size() > 4) bad("stop", "holds at most 4 strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = "stop[" + std::to_string(i) + "]";
    out.push_back(string(p, v[i]));
    if (out.back().empty()) bad(p, "must not be an empty string");
  }
  return out;
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts joined.
std::string content(const std::string& param, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array())
    bad(param, std::string("must be a string or an array of text parts, not ") + kind_of(v));
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = param + "[" + std::to_string(i) + "]";
    const json& part = v[i];
    if (!part.is_object()) bad(p, std::string("must be an object, not ") + kind_of(part));
    if (!part.contains("type")) bad(p + ".type", "is required");
    std::string type = string(p + ".type", part["type"]);
    for (const char* media :
         {"image_url", "input_image", "image", "input_audio", "audio", "video_url", "file"})
      if (type == media)
        throw RequestError(400, p + ".type",
                           "'" + p + ".type': \"" + type +
                               "\" is not supported: this server serves a text-only model",
                           "unsupported_content");
    if (type != "text") bad(p + ".type", "must be \"text\" (this server reads text only)");
    check_known(part, {"type", "text"}, p + ".");
    if (!part.contains("text")) bad(p + ".text", "is required");
    text += string(p + ".text", part["text"]);
  }
  return text;
}

std::vector<ChatMessage> messages(const json& v) {
  if (!v.is_array()) bad("messages", std::string("must be an array, not ") + kind_of(v));
  if (v.empty()) bad("messages", "must hold at least one message");
  std::vector<ChatMessage> out;
  std::set<std::string> call_ids;  // of the calls earlier assistant messages made
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = "messages[" + std::to_string(i) + "]";
    const json& m = v[i];
    if (!m.is_object()) bad(p, std::string("must be an object, not ") + kind_of(m));
    check_known(m, {"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"},
                p + ".");
    if (!m.contains("role")) bad(p + ".role", "is required");
    ChatMessage msg;
    msg.role = string(p + ".role", m["role"]);
    // OpenAI's newer name for the system message: the same place in every template.
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
      bad(p + ".role",
          "must be \"system\", \"developer\", \"user\", \"assistant\" or \"tool\", not \"" +
              msg.role + "\"");
    const bool calls =
        msg.role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (calls) msg.tool_calls = parse_message_tool_calls(p + ".tool_calls", m["tool_calls"]);
    for (const ToolCall& call : msg.tool_calls) call_ids.insert(call.id);
    if (m.contains("tool_calls") && !m["tool_calls"].is_null() && msg.role != "assistant")
      bad(p + ".tool_calls", "belongs to assistant messages only");
    // An assistant's message that makes calls may have null or no content.
    if (!m.contains("content") && !calls) bad(p + ".content", "is required");
    if (m.contains("content") && !(calls && m["content"].is_null()))
      msg.content = content(p + ".content", m["content"]);
    if (msg.role == "tool") {
      if (!m.contains("tool_call_id")) bad(p + ".tool_call_id", "is required for a tool message");
      msg.tool_call_id = string(p + ".tool_call_id", m["tool_call_id"]);
      // A result answers a call made before it (the template places it by that call); calls
      // sent without ids can only be trusted.
      if (!call_ids.count(msg.tool_call_id) && !call_ids.count(""))
        bad(p + ".tool_call_id", "'" + msg.tool_call_id.substr(0, 64) +
                                     "' is the id of no call an earlier assistant message made");
    } else if (m.contains("tool_call_id")) {
      bad(p + ".tool_call_id", "belongs to tool messages only");
    }
    if (m.contains("name")) string(p + ".name", m["name"]);
    // The reasoning an earlier answer of ours carried (responses' reasoning_content), sent
    // back: the qwen3.5 and harmony templates render it; prepare_prompt refuses it for the
    // families whose templates have no reasoning.
    if (m.contains("reasoning_content") && !m["reasoning_content"].is_null()) {
      if (msg.role != "assistant")
        bad(p + ".reasoning_content", "belongs to assistant messages only");
      msg.reasoning = string(p + ".reasoning_content", m["reasoning_content"]);
    }
    out.push_back(std::move(msg));
  }
  return out;
}

std::vector<int32_t> token_ids(const std::string& param, const json& v) {
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(int32_t(
        integer(param + "[" + std::to_string(i) + "]", v[i], 0, INT32_MAX, "a token id, >= 0")));
  return ids;
}

// OpenAI's four forms: a string, an array of strings, an array of token ids, an array of
// arrays of token ids. More than one prompt is a batch: n choices for each.
std::vector<PromptInput> prompts(const json& v) {
  constexpr size_t kMaxPrompts = 128;
  const std::string shapes = "a string, an array of strings, or token ids";
  if (v.is_string()) return {PromptInput{v.get<std::string>(), {}, false}};
  if (!v.is_array()) bad("prompt", "must be " + shapes + ", not " + kind_of(v));
  if (v.empty()) bad("prompt", "must not be an empty array");
  if (v[0].is_number()) return {PromptInput{"", token_ids("prompt", v), true}};
  if (v.size() > kMaxPrompts)
    bad("prompt", "holds more than " + std::to_string(kMaxPrompts) + " prompts");
  std::vector<PromptInput> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = "prompt[" + std::to_string(i) + "]";
    if (v[i].is_string()) {
      out.push_back({v[i].get<std::string>(), {}, false});
    } else if (v[i].is_array() && !v[i].empty()) {
      out.push_back({"", token_ids(p, v[i]), true});
    } else {
      bad(p,
          std::string("must be a string or a non-empty array of token ids, not ") + kind_of(v[i]));
    }
  }
  return out;
}

batching::StrategyChoice speculative(const json& v) {
  if (!v.is_object()) bad("speculative", std::string("must be an object, not ") + kind_of(v));
  check_known(v, {"proposer", "k", "rule", "allow_lossy"}, "speculative.");
  batching::StrategyChoice s;
  if (v.contains("proposer")) {
    s.proposer = string("speculative.proposer", v["proposer"]);
    if (s.proposer->empty()) bad("speculative.proposer", "must not be empty");
  }
  if (v.contains("k")) {
    if (v["k"].is_string() && v["k"].get<std::string>() == "auto")
      s.k_auto = true;
    else if (v["k"].is_string())
      bad("speculative.k", "must be an integer from 1 to 64 or \"auto\"");
    else
      s.k = int(integer("speculative.k", v["k"], 1, 64, "1 to 64, or \"auto\""));
  }
  if (v.contains("rule")) {
    s.rule = string("speculative.rule", v["rule"]);
    if (s.rule->empty()) bad("speculative.rule", "must not be empty");
  }
  if (v.contains("allow_lossy"))
    s.allow_lossy = boolean("speculative.allow_lossy", v["allow_lossy"]);
  return s;
}

// `grammar` (llama.cpp's GBNF) or `response_format` (OpenAI's JSON modes) as GBNF; the
// configuration's grammar when the request gives neither.
std::string grammar(const json& j, const std::string& configured) {
  const bool has_grammar = j.contains("grammar") && !j["grammar"].is_null();
  std::string format = "text";
  const json* rf = nullptr;
  if (j.contains("response_format") && !j["response_format"].is_null()) {
    rf = &j["response_format"];
    if (!rf->is_object())
      bad("response_format", std::string("must be an object, not ") + kind_of(*rf));
    check_known(*rf, {"type", "json_schema"}, "response_format.");
    if (!rf->contains("type")) bad("response_format.type", "is required");
    format = string("response_format.type", (*rf)["type"]);
    if (format != "text" && format != "json_object" && format != "json_schema")
      bad("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\"");
    if (format != "json_schema" && rf->contains("json_schema"))
      bad("response_format.json_schema", "needs \"type\": \"json_schema\"");
  }
  if (has_grammar && format != "text")
    bad("grammar", "cannot be combined with a response_format other than text");
  if (has_grammar) {
    const std::string text = string("grammar", j["grammar"]);
    if (text.size() > (size_t{1} << 20)) bad("grammar", "is longer than 1 MiB");
    try {
      parse_gbnf(text);
    } catch (const GrammarError& e) {
      bad("grammar", std::string("does not parse: ") + (e.what() + 9));  // after "grammar: "
    }
    return text;
  }
  if (format == "json_object") return json_object_gbnf();
  if (format == "json_schema") {
    if (!rf->contains("json_schema")) bad("response_format.json_schema", "is required");
    const json& js = (*rf)["json_schema"];
    if (!js.is_object())
      bad("response_format.json_schema", std::string("must be an object, not ") + kind_of(js));
    check_known(js, {"name", "description", "schema", "strict"}, "response_format.json_schema.");
    if (!js.contains("name")) bad("response_format.json_schema.name", "is required");
    const std::string name = string("response_format.json_schema.name", js["name"]);
    if (name.empty() || name.size() > 64)
      bad("response_format.json_schema.name", "must be 1 to 64 characters");
    if (js.contains("strict") && !js["strict"].is_null())
      boolean("response_format.json_schema.strict", js["strict"]);
    if (!js.contains("schema")) return json_object_gbnf();
    try {
      return json_schema_gbnf(js["schema"], "response_format.json_schema.schema");
    } catch (const GrammarError& e) {
      // The message starts with the keyword's path: the param names the schema.
      throw RequestError(400, "response_format.json_schema.schema", e.what());
    }
  }
  return configured;
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body, bool chat,
                                           const SamplingConfig& defaults) {
  json j = parse_json_body(body);
  if (!j.is_object())
    throw RequestError(400, "",
                       std::string("the request body must be a JSON object, not ") + kind_of(j));
  // llama-server's clients send its sampler switches, off, on these routes too.
  drop_switches_left_off(j);
  std::set<std::string> known = {
      "model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "stop", "seed", "n",
      "stream", "stream_options", "user", "speculative", "logprobs", "presence_penalty",
      "frequency_penalty", "repeat_penalty", "repeat_last_n", "logit_bias", "response_format",
      "grammar", "cache_salt",
      // What llama-server's and vLLM's clients send (SERVER.md's
      // compatibility table): honoured exactly, or refused by name.
      "n_predict", "min_tokens", "repetition_penalty", "skip_special_tokens", "cache_prompt",
      "id_slot", "best_of", "ignore_eos"};
  if (chat)
    for (const char* key :
         {"top_logprobs", "tools", "tool_choice", "parallel_tool_calls", "reasoning_effort"})
      known.insert(key);
  known.insert(chat ? "messages" : "prompt");
  if (!chat) known.insert("echo");
  if (chat) known.insert("max_completion_tokens");
  check_known(j, known, "");

  CompletionRequest r;
  r.chat = chat;
  r.sampling = defaults;
  r.max_tokens = defaults.max_tokens;
  if (j.contains("model")) r.model = string("model", j["model"]);
  if (chat) {
    if (!j.contains("messages")) bad("messages", "is required");
    r.messages = messages(j["messages"]);
    // The tools' schemas in the client's key order (the parse above keeps none).
    const bool tools = j.contains("tools") && j["tools"].is_array() && !j["tools"].empty();
    r.tools = parse_tool_request(j, tools ? ordered_member(body, "tools") : nullptr);
    if (j.contains("reasoning_effort") && !j["reasoning_effort"].is_null()) {
      r.reasoning_effort = string("reasoning_effort", j["reasoning_effort"]);
      if (r.reasoning_effort != "low" && r.reasoning_effort != "medium" &&
          r.reasoning_effort != "high")
        bad("reasoning_effort", "must be \"low\", \"medium\" or \"high\"");
    }
  } else {
    if (!j.contains("prompt")) bad("prompt", "is required");
    r.prompts = prompts(j["prompt"]);
  }
  std::string max_tokens_field;  // the one of the synonyms given
  for (const char* key : {"max_tokens", "max_completion_tokens", "n_predict"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    // llama-server's n_predict: -1 = until the context ends (the room it leaves).
    const int n = key == std::string("n_predict")
                      ? int(integer(key, j[key], -1, 1 << 24, "-1 (no limit) or 1 to 16777216"))
                      : int(integer(key, j[key], 1, 1 << 24, "1 to 16777216"));
    if (n == 0) bad(key, "is out of range (-1 (no limit) or 1 to 16777216)");
    const int tokens = n < 0 ? 1 << 24 : n;
    if (!max_tokens_field.empty() && tokens != r.max_tokens)
      bad(key, "differs from '" + max_tokens_field + "': give one of them");
    max_tokens_field = key;
    r.max_tokens = tokens;
  }
  if (j.contains("temperature") && !j["temperature"].is_null())
    r.sampling.temperature = number("temperature", j["temperature"], 0, 2, "0 to 2");
  if (const std::string range = temperature_range(r.sampling.temperature); !range.empty())
    bad("temperature", "is out of range (" + range + ")");
  if (j.contains("top_p") && !j["top_p"].is_null()) {
    r.sampling.top_p = number("top_p", j["top_p"], 0, 1, "0 < top_p <= 1");
    if (r.sampling.top_p <= 0) bad("top_p", "is out of range (0 < top_p <= 1)");
  }
  // vLLM's clients send -1 for off (its default before 0 was).
  if (j.contains("top_k") && !j["top_k"].is_null())
    r.sampling.top_k =
        std::max(0, int(integer("top_k", j["top_k"], -1, INT32_MAX, "0 or -1 = off, else >= 1")));
  if (j.contains("min_p") && !j["min_p"].is_null()) {
    r.sampling.min_p = number("min_p", j["min_p"], 0, 1, "0 <= min_p < 1");
    if (r.sampling.min_p >= 1) bad("min_p", "is out of range (0 <= min_p < 1)");
  }
  if (j.contains("stop")) r.sampling.stop = stops(j["stop"]);
  for (const char* key : {"presence_penalty", "frequency_penalty"})
    if (j.contains(key) && !j[key].is_null())
      (key[0] == 'p' ? r.sampling.presence_penalty : r.sampling.frequency_penalty) =
          number(key, j[key], -2, 2, "-2 to 2");
  if (j.contains("repeat_penalty") && !j["repeat_penalty"].is_null()) {
    r.sampling.repeat_penalty =
        number("repeat_penalty", j["repeat_penalty"], 0.01, 10, "0.01 to 10; 1 = off");
  }
  // vLLM's repetition_penalty is llama.cpp's formula over every token of the prompt and the
  // output: repeat_penalty with the whole context as its window unless one is given.
  if (j.contains("repetition_penalty") && !j["repetition_penalty"].is_null()) {
    const double v =
        number("repetition_penalty", j["repetition_penalty"], 0.01, 10, "0.01 to 10; 1 = off");
    if (j.contains("repeat_penalty") && !j["repeat_penalty"].is_null() &&
        v != r.sampling.repeat_penalty)
      bad("repetition_penalty", "differs from 'repeat_penalty': give one of them");
    r.sampling.repeat_penalty = v;
    if (!j.contains("repeat_last_n") || j["repeat_last_n"].is_null()) r.sampling.repeat_last_n = -1;
  }
  if (j.contains("repeat_last_n") && !j["repeat_last_n"].is_null())
    r.sampling.repeat_last_n = int(integer("repeat_last_n", j["repeat_last_n"], -1, 1 << 24,
                                           "-1 = the whole context, 0 = off, else tokens"));
  if (j.contains("logit_bias") && !j["logit_bias"].is_null()) {
    const json& b = j["logit_bias"];
    if (!b.is_object()) bad("logit_bias", std::string("must be an object, not ") + kind_of(b));
    if (b.size() > 1024) bad("logit_bias", "has more than 1024 entries");
    for (const auto& [key, value] : b.items()) {
      // OpenAI's keys are token ids written as strings: decimal digits, no sign, space or
      // leading zero, so that two keys never name one token.
      const bool canonical = !key.empty() && key.size() <= 10 &&
                             key.find_first_not_of("0123456789") == std::string::npos &&
                             (key == "0" || key[0] != '0');
      const long long id = canonical ? std::stoll(key) : -1;
      if (!canonical || id > INT32_MAX)
        bad("logit_bias",
            "keys must be token ids written in decimal (\"" + key.substr(0, 32) + "\" is not)");
      r.sampling.logit_bias.emplace_back(
          static_cast<int32_t>(id),
          static_cast<float>(number("logit_bias." + key, value, -100, 100, "-100 to 100")));
    }
  }
  if (j.contains("min_tokens") && !j["min_tokens"].is_null()) {
    r.sampling.min_tokens = int(integer("min_tokens", j["min_tokens"], 0, 1 << 24, ">= 0"));
    if (r.sampling.min_tokens > r.max_tokens)
      bad("min_tokens", "is more than max_tokens (" + std::to_string(r.max_tokens) + ")");
  }
  // vLLM's and llama-server's ignore_eos, as [sampling] ignore_eos.
  if (j.contains("ignore_eos") && !j["ignore_eos"].is_null())
    r.sampling.ignore_eos = boolean("ignore_eos", j["ignore_eos"]);
  r.sampling.grammar = grammar(j, defaults.grammar);
  if (j.contains("grammar") && !j["grammar"].is_null())
    r.grammar_field = "grammar";
  else if (r.sampling.grammar != defaults.grammar)
    r.grammar_field = "response_format";
  if (r.sampling.min_tokens > 0 && (!r.sampling.grammar.empty() || r.tools.forced()))
    bad("min_tokens",
        "cannot be combined with a grammar, a response_format or a forced tool call (the "
        "grammar decides where the output may end)");
  if (r.sampling.ignore_eos && j.contains("ignore_eos") &&
      (!r.sampling.grammar.empty() || r.tools.forced()))
    bad("ignore_eos",
        "cannot be combined with a grammar, a response_format or a forced tool call (the "
        "grammar decides where the output may end)");
  if (r.tools.forced() && !r.sampling.grammar.empty())
    bad("tool_choice",
        "forces a call through a grammar, so it cannot be combined with another one "
        "('grammar', 'response_format', or [sampling] grammar)");
  if (j.contains("seed") && !j["seed"].is_null())
    r.seed = uint64_t(integer("seed", j["seed"], 0, INT64_MAX, ">= 0"));
  if (j.contains("n") && !j["n"].is_null()) r.n = int(integer("n", j["n"], 1, 128, "1 to 128"));
  if (j.contains("stream") && !j["stream"].is_null()) r.stream = boolean("stream", j["stream"]);
  if (!chat && j.contains("logprobs") && !j["logprobs"].is_null())
    r.logprobs = int(integer("logprobs", j["logprobs"], 0, 20, "0 to 20"));
  if (chat && j.contains("logprobs") && !j["logprobs"].is_null() &&
      boolean("logprobs", j["logprobs"]))
    r.logprobs = 0;
  if (chat && j.contains("top_logprobs") && !j["top_logprobs"].is_null()) {
    const int top = int(integer("top_logprobs", j["top_logprobs"], 0, 20, "0 to 20"));
    if (r.logprobs < 0) bad("top_logprobs", "needs \"logprobs\": true");
    r.logprobs = top;
  }
  if (j.contains("stream_options") && !j["stream_options"].is_null()) {
    const json& so = j["stream_options"];
    if (!so.is_object())
      bad("stream_options", std::string("must be an object, not ") + kind_of(so));
    check_known(so, {"include_usage", "continuous_usage_stats"}, "stream_options.");
    if (so.contains("include_usage"))
      r.include_usage = boolean("stream_options.include_usage", so["include_usage"]);
    // vLLM's: the usage so far in every chunk.
    if (so.contains("continuous_usage_stats"))
      r.continuous_usage =
          boolean("stream_options.continuous_usage_stats", so["continuous_usage_stats"]);
  }
  if (j.contains("user") && !j["user"].is_null()) string("user", j["user"]);
  if (j.contains("skip_special_tokens") && !j["skip_special_tokens"].is_null())
    r.sampling.render_special = !boolean("skip_special_tokens", j["skip_special_tokens"]);
  // llama-server's slot hints: the prefix cache reuses any request's prompt blocks already,
  // whichever sequence ran it, so both are checked and need nothing more.
  if (j.contains("cache_prompt") && !j["cache_prompt"].is_null())
    boolean("cache_prompt", j["cache_prompt"]);
  if (j.contains("id_slot") && !j["id_slot"].is_null())
    integer("id_slot", j["id_slot"], -1, INT32_MAX, "-1 (any) or a slot number");
  if (j.contains("best_of") && !j["best_of"].is_null() &&
      integer("best_of", j["best_of"], 1, 128, "1 to 128") != 1)
    throw RequestError(400, "best_of",
                       "'best_of' above 1 is not supported: specd returns every choice it "
                       "samples (use 'n') and never ranks them by likelihood",
                       "unsupported_field");
  if (!chat && j.contains("echo") && !j["echo"].is_null()) {
    r.echo = boolean("echo", j["echo"]);
    if (r.echo && r.logprobs >= 0)
      throw RequestError(400, "echo",
                         "'echo' with 'logprobs' is not supported: the prompt's tokens get no "
                         "log-probabilities here",
                         "unsupported_field");
  }
  if (j.contains("cache_salt") && !j["cache_salt"].is_null()) {
    r.cache_salt = string("cache_salt", j["cache_salt"]);
    if (r.cache_salt.empty() || r.cache_salt.size() > 1024)
      bad("cache_salt", "must be 1 to 1024 bytes long");
  }
  if (j.contains("speculative") && !j["speculative"].is_null())
    r.speculative = speculative(j["speculative"]);
  return r;
}

batching::GenerationRequest CompletionRequest::generation(size_t index) const {
  batching::GenerationRequest g;
  g.prompt = prepared.at(index).tokens;
  g.max_tokens = prepared.at(index).max_tokens;
  g.sampling = sampling;
  g.seed = seed;
  g.logprobs = logprobs;
  g.strategy = speculative;
  g.prefix_partition = cache_salt_partition(cache_salt);
  g.grammar_field = grammar_field;
  return g;
}

RequestError request_error(const batching::Refusal& refusal, bool chat) {
  using Kind = batching::Refusal::Kind;
  const std::string field = refusal.field == "prompt" && chat ? "messages" : refusal.field;
  switch (refusal.kind) {
    case Kind::invalid_request:
      return RequestError(400, field, refusal.what(),
                          refusal.code.empty() ? "invalid_request_error" : refusal.code);
    case Kind::retry_later:
      return RequestError(503, field, refusal.what(),
                          refusal.code.empty() ? "unavailable" : refusal.code);
    case Kind::internal_failure:
      break;
  }
  return RequestError(500, field, refusal.what(),
                      refusal.code.empty() ? "server_error" : refusal.code);
}

}  // namespace specd::server
