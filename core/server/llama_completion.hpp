// llama-server's native `POST /completion` route: its request read as a /v1/completions
// request where each field means the same (docs/SERVER.md, "llama-server's /completion"),
// its answers in llama-server's shapes (content, stop, stop_type, tokens_predicted, timings
// with draft_n and draft_n_accepted; a stream of `data:` objects without `[DONE]`).
// A field that llama-server honours and specd cannot is refused by name; sampler switches
// left off are accepted (sampler_switches.hpp).
//
// Thread rule: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "engine/generation_stats.hpp"
#include "server/request.hpp"
#include "server/responses.hpp"

namespace specd::server {

struct LlamaCompletion {
  std::string openai_body;     // the same request as a /v1/completions body
  bool return_tokens = false;  // answer the generated token ids in "tokens"
};

// Throws RequestError (400) naming the field for what cannot be honoured exactly.
LlamaCompletion llama_completion_request(std::string_view body);

// An error about the translated request, in the /completion body's names (its json_schema
// was read as response_format.json_schema.schema).
RequestError in_llama_names(const RequestError& error);

// A streamed piece: {"index", "content", "tokens", "stop": false, "id_slot",
// "tokens_predicted", "tokens_evaluated"} as an SSE event.
std::string llama_chunk_event(const ResponseInfo& info, const std::string& text);
// The whole answer (non-streamed) or the stream's last object ("stop": true, "content" then
// holds only what was not streamed: ""): stop_type ("eos", "word", "limit"), stopping_word,
// timings (llama-server's keys; draft_n and draft_n_accepted count drafted and accepted
// tokens).
std::string llama_final_json(const ResponseInfo& info, const GenerationResult& result,
                             bool streamed, bool return_tokens);

}  // namespace specd::server
