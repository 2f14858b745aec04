// The engine: the speculative round (ARCHITECTURE.md, "The round") over a verifier, an
// optional proposer and an acceptance rule, all chosen from the configuration.
//
//   propose → verify (one target pass over root + tree) → accept → commit → emit
//
// With [proposer] kind = "none" a round drafts nothing: one target pass per token, the same
// sampling transform and the same sampler — plain decoding.
#pragma once

#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/generation_stats.hpp"
#include "plugin/registry.hpp"

namespace specd {

class Backend;
class Device;
class LlamaModel;
class Tokenizer;
class Verifier;
class Proposer;
class ProposerSequence;
class AcceptanceRule;
class AdaptiveK;

struct GenerateOptions {
  std::optional<int> max_tokens;  // overrides [sampling] max_tokens
  // Called with each piece of complete UTF-8 text once it is final (for streaming): text
  // that could still begin a stop string is held back until the next token decides, so the
  // pieces always add up to the result's text.
  std::function<void(const std::string&)> on_text;
  // When set and *interrupt becomes nonzero (e.g. from a signal handler), generation ends
  // before the next round, with what was generated so far and stop_reason "interrupted".
  const volatile std::sig_atomic_t* interrupt = nullptr;
  // Per-generation sampling (temperature, top_k/p, min_p, stop, ignore_eos) in place of the
  // configuration's [sampling]; max_tokens still comes from `max_tokens` above. The
  // proposer keeps the settings it was built with (its q only changes efficiency).
  std::optional<SamplingConfig> sampling;
  // Polled once per round; returning true ends the generation with stop_reason "cancelled".
  std::function<bool()> cancelled;
  // Called after each round with its draft (node tokens in tree order and each node's parent:
  // 0 for the root, else the parent's 1-based place in that order; empty for a plain round)
  // and how many nodes were accepted: traces, and tests that compare drafts with another
  // engine's.
  std::function<void(std::span<const int32_t> tokens, std::span<const int32_t> parents,
                     uint64_t accepted)>
      on_round;
};

// What an Engine is built for.
enum class EngineUse {
  // generate(): the engine also holds its own verifier (the built-in one holds a KV cache of
  // the whole context), proposer, rule and draft-length state.
  generate,
  // A scheduler's shared parts (core/server/): backend, device, tokenizer and target only.
  // Each sequence brings its own verifier, proposer and rule (make_proposer, make_rule), so
  // none is built here; generate() refuses. A plugin verifier is still built (it may be
  // the only source of the context length and vocabulary).
  shared,
};

class Engine {
 public:
  // Loads backend, target, tokenizer, and for EngineUse::generate the verifier, proposer and
  // rule; checks their pairing. Throws UsageError for configuration problems, Error for
  // runtime ones.
  Engine(const Config& config, const PluginRegistry& registry, EngineUse use = EngineUse::generate);
  ~Engine();

  GenerationResult generate(const std::string& prompt, const GenerateOptions& options = {});
  // The same from token ids (BOS already applied as the caller wants).
  GenerationResult generate_tokens(const std::vector<int32_t>& prompt,
                                   const GenerateOptions& options = {});

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  uint32_t context_length() const;  // most tokens a sequence (prompt + output) may hold
  std::string backend_name() const;
  std::string proposer_name() const;  // "none" for plain decoding
  std::string rule_name() const;      // "" for plain decoding
  std::string rule_label() const;     // "exact", "greedy-exact", "lossy"; "" for plain
  void reseed(uint64_t seed);

  // For a scheduler that runs many sequences over this engine's target (core/server/): the
  // target model (one per engine, shared by those sequences; used by one thread at a time),
  // the configuration, the rows the device computes batch-invariantly, and a proposer and
  // rule for another configuration's [proposer] / [acceptance] sections over this target
  // (nullptr for proposer kind "none"; UsageError located in the configuration).
  // target() throws Error when the verifier is a plugin (no local target model).
  LlamaModel& target();
  const Config& config() const { return config_; }
  uint32_t invariant_rows() const;
  EngineUse use() const { return use_; }
  std::unique_ptr<Proposer> make_proposer(const Config& config,
                                          const PluginRegistry& registry) const;
  std::unique_ptr<AcceptanceRule> make_rule(const Config& config,
                                            const PluginRegistry& registry) const;

 private:
  uint32_t vocab_size() const;  // the target's output rows
  uint32_t hidden_dim() const;
  // An EAGLE-3 head as [proposer] model names the target layers whose inputs it takes
  // (head_target_layers): the target computes those as its features for every row.
  void ask_target_for_head_features();

  Config config_;
  EngineUse use_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<LlamaModel> target_;
  std::unique_ptr<Verifier> verifier_;
  std::unique_ptr<Proposer> proposer_;
  std::unique_ptr<ProposerSequence> proposer_sequence_;  // generate()'s one sequence
  std::unique_ptr<AcceptanceRule> rule_;
  std::unique_ptr<AdaptiveK> adaptive_;  // k = "auto": the draft length per round
  std::unique_ptr<struct specd_rng> rng_;
  std::vector<int32_t> stop_ids_;
};

}  // namespace specd
