// The run configuration: one TOML file (schema in docs/CONFIG.md) plus --set overrides.
//
// Sections: [engine] [target] [proposer] [acceptance] [verifier] [sampling] [plugins]
// [server]. Keys of [proposer], [acceptance] and [verifier] that the core does not consume are
// handed to the chosen plugin, which validates them; every other unknown key is an error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace specd {

// A value's place: "file:line:col", or "--set key" for a command-line override.
struct SourceLocation {
  std::string text;
};

// A plugin-specific key, kept with its TOML type and location.
struct PluginParam {
  // `array`: every element has one type (integers mixed with floats are floats), given in
  // `elements`; other arrays (mixed kinds, tables) and tables are `string`, as TOML text.
  enum class Type { boolean, integer, floating, string, array };
  std::string key;  // empty for an array element
  Type type = Type::string;
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;           // strings; arrays (of any kind) and tables as TOML text
  std::vector<PluginParam> elements;  // type == array: the elements, in order
  std::string location;
};

// The most threads a run may ask for (the CPU backend's own limit).
inline constexpr int kMaxThreads = 256;

struct EngineConfig {
  std::string backend = "auto";  // "cpu" | "cuda" | "hip" | "auto" | a plugin id
  int threads = 0;               // 0 = all hardware threads, at most kMaxThreads
  uint64_t seed = 0;
  int context = 0;              // KV capacity in tokens; 0 = the model's context length
  std::string kv_type = "f32";  // KV cache rows: "f32" | "f16" | "q8_0" (models' default)
};

struct TargetConfig {
  std::string model;    // GGUF path (relative paths resolve against the config file)
  std::string backend;  // empty = [engine] backend
  std::string kv_type;  // empty = [engine] kv_type
};

struct ProposerConfig {
  std::string kind = "none";        // "none" = plain decoding; else a proposer plugin id or name
  std::string model;                // draft GGUF or head GGUF, for proposers that take one
  int k = 4;                        // draft length (tokens per round)
  bool k_auto = false;              // k = "auto"
  bool kind_auto = false;           // kind = "auto", replaced by the kind the file calls for
  std::string backend;              // empty = the target's backend
  std::string kv_type;              // its model's KV cache; empty = [engine] kv_type
  std::vector<PluginParam> params;  // every other key, for the plugin

  // Whether the draft length is planned each step: k = "auto" on a proposer that drafts.
  bool plans_k() const { return kind != "none" && k_auto; }
};

struct AcceptanceConfig {
  std::string rule;  // empty = the proposer's default
  bool allow_lossy = false;
  std::vector<PluginParam> params;  // every other key, for the plugin
};

// [verifier]: what scores the drafts. "target" = the built-in verifier (the [target] model
// on the run's backend); else a verifier plugin id or name (e.g. "remote"), which receives
// every other key of the section.
struct VerifierConfig {
  std::string kind = "target";
  std::vector<PluginParam> params;  // every other key, for the plugin
};

struct SamplingConfig {
  double temperature = 1.0;  // 0 = greedy (argmax, ties to the lowest id)
  int top_k = 0;             // 0 = off
  double top_p = 1.0;        // 1 = off
  double min_p = 0.0;        // 0 = off
  int max_tokens = 128;
  std::vector<std::string> stop;  // stop strings; the output ends before them
  bool ignore_eos = false;
  bool render_special = false;  // control tokens appear in the text (requests' skip_special_tokens)
  int min_tokens = 0;  // before this many tokens no end of sequence or stop string (requests)
  double presence_penalty = 0;                        // OpenAI's, -2..2 (sampling/penalties.hpp)
  double frequency_penalty = 0;                       // OpenAI's, -2..2
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, -100..100 (requests only)
  double repeat_penalty = 1.0;   // llama.cpp's, [0.01, 10]; 1 = off (sampling/penalties.hpp)
  int repeat_last_n = 64;        // its window; 0 = off, -1 = the whole context
  std::string grammar;           // GBNF the output must match (grammar/gbnf_grammar.hpp); "" = none
  std::string grammar_file;      // a file holding GBNF: read into `grammar`
  std::string json_schema_file;  // a JSON Schema file: its grammar goes into `grammar`
};

struct PluginsConfig {
  std::vector<std::string> paths;
};

// [server]: `specd serve` (docs/SERVER.md). Other commands ignore it.
struct ServerConfig {
  std::string host = "127.0.0.1";         // loopback unless told otherwise
  int port = 8080;                        // 0 = any free port
  int max_sequences = 16;                 // sequences decoded at once (one batch)
  int max_prefill_rows = 0;               // a step's prefill rows (whole chunks); 0 = no limit
  int queue_limit = 16;                   // requests waiting beyond it get 503 (0..1024)
  int kv_budget = 0;                      // KV rows all sequences share (0: max_seqs × context)
  int64_t max_body_bytes = 1 << 20;       // request bodies above it get 413
  std::string api_key;                    // set: requests need "Authorization: Bearer <key>"
  std::string model_name;                 // the id /v1/models lists; "" = the target file's stem
  std::string chat_template;              // a built-in family name; "" = the target's GGUF template
  std::string chat_template_file;         // a file holding a template text to recognise
  int max_engines = 2;                    // engines kept for per-request proposer/rule settings
  double drain_timeout_s = 30.0;          // SIGTERM: seconds in-flight requests get before cancel
  bool allow_public_without_key = false;  // a non-loopback host without api_key is refused
  int max_n = 8;                          // most choices a request may ask for (`n`)
  bool prefix_cache = true;               // prompts' full KV blocks shared between requests
  int verify_sessions = 4;                // POST /v1/verify sessions held at once (each a KV cache)
  double verify_idle_s = 300;             // a verify session unused this long is freed
  double verify_yield_s = 5;              // ... or this long, when a completion needs its room
  double kv_wait_s = 30;  // a completion kept out by verify sessions in use gets 503 after it
  double request_timeout_s = 10;  // a connection's whole request (headers, body) must arrive in it
  int max_waiting_per_client = 32;  // connections of one address still sending a request; 0 = any
  // KV-cache events for prefix-aware routers (docs/SCALING.md): a ZeroMQ endpoint to publish
  // on ("" = off), one to answer replay requests on ("" = none), and the topic.
  std::string kv_events_endpoint;
  std::string kv_events_replay_endpoint;
  std::string kv_events_topic = "kv-events";
};

struct Config {
  std::string path;  // the file it came from ("" when built in code)
  EngineConfig engine;
  TargetConfig target;
  ProposerConfig proposer;
  AcceptanceConfig acceptance;
  VerifierConfig verifier;
  SamplingConfig sampling;
  PluginsConfig plugins;
  ServerConfig server;
  // Where each key was set ("section.key" -> location), for later messages.
  std::map<std::string, std::string> locations;

  // Location of a key, or the file name when it was not set.
  std::string where(const std::string& dotted_key) const;
};

// Loads and validates a configuration. `overrides` are "section.key=value" strings (values
// parsed as TOML, or taken as a string when they do not parse). Collects every problem and
// throws one UsageError listing them all, one "file:line:col: message" per line.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The same from TOML text (for tests); `name` stands in for the file name.
Config parse_config(const std::string& toml_text, const std::string& name,
                    const std::vector<std::string>& overrides = {});

}  // namespace specd

namespace specd {

// Checks what `specd run` needs beyond the schema (a target model); throws UsageError
// naming the file and the missing key.
void check_required_for_run(const Config& config);

}  // namespace specd
