#include "engine/engine.hpp"

#include <algorithm>
#include <chrono>

#include "acceptance/acceptance_rule.hpp"
#include "acceptance/labels.hpp"
#include "acceptance/pairing.hpp"
#include "acceptance/tree_validation.hpp"
#include "backend/backend.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "engine/adaptive_k.hpp"
#include "engine/backend_selection.hpp"
#include "engine/kv_budget.hpp"
#include "engine/padding_mask.hpp"
#include "engine/plugin_checks.hpp"
#include "engine/plugin_params.hpp"
#include "engine/proposer.hpp"
#include "engine/verifier.hpp"
#include "engine/verifier_factory.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/llama_model.hpp"
#include "plugin/host_services.hpp"
#include "plugin/model_service.hpp"
#include "sampling/sample_row.hpp"
#include "sampling/sampling_transform.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

SamplingParams sampling_params(const SamplingConfig& s) {
  SamplingParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p = s.min_p;
  return p;
}

// Emits generated tokens one at a time, applying the stop conditions exactly as plain
// decoding does after each token. Streamed text always equals the final text: text that
// could still be the start of a stop string is held back until the next token decides.
class Emitter {
 public:
  // The text is that of the continuation of `prompt` (see StreamingDetokenizer).
  Emitter(const Tokenizer& tokenizer, const SamplingConfig& sampling, int max_tokens,
          const std::function<void(const std::string&)>& on_text,
          const std::vector<int32_t>& prompt)
      : tokenizer_(tokenizer),
        stops_(sampling.stop),
        ignore_eos_(sampling.ignore_eos),
        max_tokens_(max_tokens),
        on_text_(on_text),
        detok_(tokenizer, false, prompt) {}

  // Returns false when generation must end after this token.
  bool push(int32_t token, GenerationResult& result) {
    ++count_;
    if (!ignore_eos_ && token == tokenizer_.eos_id()) {
      result.stop_reason = "eos";
      return false;
    }
    result.tokens.push_back(token);
    const size_t before = result.text.size();
    result.text += detok_.push(token);
    // The earliest stop string that ends in the new text (an older match would have ended
    // generation already).
    size_t cut = std::string::npos;
    for (const std::string& stop : stops_) {
      if (stop.empty()) continue;
      const size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
      // A match never starts inside a UTF-8 character (the configuration refuses stop
      // strings that are not whole characters; a Config built in code is held to it here).
      for (size_t at = result.text.find(stop, from); at != std::string::npos;
           at = result.text.find(stop, at + 1))
        if (!continuation_byte(result.text[at])) {
          cut = std::min(cut, at);
          break;
        }
    }
    if (cut != std::string::npos) {
      result.text.resize(cut);
      emit_up_to(result.text, cut);
      result.stop_reason = "stop";
      stopped_ = true;
      return false;
    }
    emit_up_to(result.text, result.text.size() - held_back(result.text));
    if (count_ >= max_tokens_) {
      result.stop_reason = "length";
      return false;
    }
    return true;
  }

  void finish(GenerationResult& result) {
    if (!stopped_) result.text += detok_.flush();
    emit_up_to(result.text, result.text.size());
  }

  int remaining() const { return max_tokens_ - count_; }

 private:
  // Bytes at the end of `text` that begin some stop string (the longest such suffix,
  // shorter than the stop string itself: a whole one would have matched).
  static bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

  size_t held_back(const std::string& text) const {
    size_t held = 0;
    for (const std::string& stop : stops_) {
      for (size_t n = std::min(stop.size() - (stop.empty() ? 0 : 1), text.size()); n > held; --n)
        if (!continuation_byte(text[text.size() - n]) &&
            text.compare(text.size() - n, n, stop, 0, n) == 0) {
          held = n;
          break;
        }
    }
    return held;
  }

  void emit_up_to(const std::string& text, size_t end) {
    if (end <= emitted_) return;
    if (on_text_) on_text_(text.substr(emitted_, end - emitted_));
    emitted_ = end;
  }

  const Tokenizer& tokenizer_;
  const std::vector<std::string>& stops_;
  bool ignore_eos_;
  int max_tokens_;
  const std::function<void(const std::string&)>& on_text_;
  StreamingDetokenizer detok_;
  int count_ = 0;
  size_t emitted_ = 0;  // bytes of the text already given to on_text_
  bool stopped_ = false;
};

}  // namespace

Engine::Engine(const Config& config, const PluginRegistry& registry) : config_(config) {
  check_required_for_run(config_);
  validate_sampling_params(sampling_params(config_.sampling));
  // A model is memory-mapped: a FIFO would block the open, a directory or device fail it
  // later without saying which key named it.
  const std::pair<const char*, std::string> model_keys[] = {
      {"target.model", config_.target.model},
      {"proposer.model", config_.proposer.kind == "none" ? "" : config_.proposer.model}};
  for (const auto& [key, path] : model_keys) {
    if (path.empty()) continue;
    const std::string kind = file_kind_problem(path);
    if (!kind.empty())
      throw UsageError(config_.where(key) + ": '" + path + "' is " + kind +
                       ", not a regular file (" + key + " names a model file, which is mapped)");
  }

  // Choose the rule and proposer first: configuration mistakes are reported before the
  // slow part (loading models).
  const LoadedPlugin* proposer_plugin = nullptr;
  if (config_.proposer.kind != "none") {
    try {
      proposer_plugin = &registry.require(config_.proposer.kind, SPECD_KIND_PROPOSER);
    } catch (const UsageError& e) {
      throw UsageError(config_.where("proposer.kind") + ": " + e.what());
    }
  }

  find_verifier_plugin(config_, registry);  // an unknown [verifier] kind: say so now

  const std::string backend_key =
      config_.target.backend.empty() ? "engine.backend" : "target.backend";
  std::string target_backend =
      config_.target.backend.empty() ? config_.engine.backend : config_.target.backend;
  const LoadedPlugin* backend_plugin = nullptr;
  try {
    backend_plugin = &select_backend(registry, target_backend);
  } catch (const UsageError& e) {
    // An unknown id is a configuration mistake: say where, as for the proposer and rule.
    throw UsageError(config_.where(backend_key) + ": " + e.what());
  }
  backend_ = std::make_unique<Backend>(*backend_plugin);
  DeviceOptions device_options;
  device_options.threads = static_cast<uint32_t>(config_.engine.threads);
  device_ = backend_->open(device_options);

  try {
    // One parse of the file serves the tokenizer and the model.
    GgufFile target_file = GgufFile::open(config_.target.model);
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(target_file));
    // A plugin verifier (e.g. remote) scores on its own model: only the tokenizer is read.
    if (uses_local_target(config_)) target_ = LlamaModel::load(std::move(target_file), *device_);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    // The file's own problem, said where the configuration names the file.
    throw Error(config_.where("target.model") + ": " + e.what());
  }
  verifier_ = make_verifier(config_, registry, target_.get(), *tokenizer_);
  if (tokenizer_->n_tokens() > static_cast<int32_t>(verifier_->vocab_size()))
    throw Error(config_.target.model + ": the tokenizer has " +
                std::to_string(tokenizer_->n_tokens()) + " tokens but the model's output has " +
                std::to_string(verifier_->vocab_size()));
  rng_ = std::make_unique<specd_rng>(config_.engine.seed);

  if (proposer_plugin) {
    TargetShape shape;
    shape.vocab_size = verifier_->vocab_size();
    shape.hidden_dim = verifier_->hidden_dim();
    shape.invariant_max_rows = device_->info().invariant_max_rows;
    const ProposerSetup setup = proposer_setup(config_, *tokenizer_, shape);
    {
      ModelServiceScope models(
          registry, config_.proposer.backend.empty() ? target_backend : config_.proposer.backend,
          static_cast<uint32_t>(config_.engine.threads));
      ProposerConfig proposer_config = config_.proposer;
      if (config_.proposer.k_auto) {
        // The proposer is built for the longest draft; each round asks for what the
        // running estimates of acceptance and cost say pays best (0 = a plain round).
        AdaptiveKOptions options;
        proposer_config.k = static_cast<int>(options.k_max);
        adaptive_ = std::make_unique<AdaptiveK>(options);
      }
      try {
        proposer_ = std::make_unique<Proposer>(*proposer_plugin, proposer_config, setup);
      } catch (const UsageError& e) {
        throw_located_proposer_error(config_, e);
      }
    }

    rule_ = make_checked_rule(config_, registry, *proposer_plugin);
  }
}

Engine::~Engine() = default;

LlamaModel& Engine::target_model() {
  if (!target_)
    throw Error("the engine has no local target model: its verifier is '" +
                config_.verifier.kind + "'");
  return *target_;
}

uint32_t Engine::context_length() const {
  return verifier_->context_length();
}
std::string Engine::backend_name() const {
  return backend_->name();
}
std::string Engine::proposer_name() const {
  return proposer_ ? proposer_->name() : "none";
}
std::string Engine::rule_name() const {
  return rule_ ? rule_->name() : "";
}
std::string Engine::rule_label() const {
  return rule_ ? label_name(rule_->label()) : "";
}
void Engine::reseed(uint64_t seed) {
  *rng_ = specd_rng(seed);
}

GenerationResult Engine::generate(const std::string& prompt, const GenerateOptions& options) {
  std::vector<int32_t> tokens = tokenizer_->encode(prompt, /*add_special=*/true);
  if (tokens.empty())
    throw UsageError("the prompt is empty and the model adds no BOS token to start from");
  return generate_tokens(tokens, options);
}

GenerationResult Engine::generate_tokens(const std::vector<int32_t>& prompt,
                                         const GenerateOptions& options) {
  const SamplingConfig& sampling_config = options.sampling ? *options.sampling : config_.sampling;
  if (options.sampling) validate_sampling_params(sampling_params(sampling_config));
  int max_tokens = options.max_tokens.value_or(config_.sampling.max_tokens);
  if (max_tokens < 1) throw UsageError("the number of tokens to generate must be at least 1");
  const uint32_t vocab = verifier_->vocab_size();
  for (int32_t t : prompt)
    if (t < 0 || static_cast<uint32_t>(t) >= vocab)
      throw UsageError("prompt token " + std::to_string(t) + " is outside the vocabulary");
  if (prompt.size() >= verifier_->context_length())
    throw UsageError("the prompt has " + std::to_string(prompt.size()) +
                     " tokens; the context holds " + std::to_string(verifier_->context_length()) +
                     " (" + config_.target.model + "), leaving no room to generate");

  GenerationResult result;
  GenerationStats& stats = result.stats;
  stats.prompt_tokens = prompt.size();
  const SamplingParams sampling = sampling_params(sampling_config);
  const uint32_t hidden_dim = proposer_ && proposer_->needs_hidden() ? verifier_->hidden_dim() : 0;

  auto start = Clock::now();
  std::vector<float> hidden(hidden_dim ? (prompt.size() - 1) * hidden_dim : 0);
  verifier_->begin(prompt, hidden_dim ? hidden.data() : nullptr);
  stats.prefill_s = seconds_since(start);
  if (proposer_) proposer_->begin(prompt, hidden_dim ? hidden.data() : nullptr);

  Emitter emitter(*tokenizer_, sampling_config, max_tokens, options.on_text, prompt);
  std::vector<int32_t> sequence = prompt;
  Draft draft;
  std::vector<float> logits;
  std::vector<double> p;
  std::vector<int32_t> emitted;
  std::vector<float> kept_hidden;
  auto generate_start = Clock::now();
  bool going = true;
  while (going) {
    if (options.interrupt && *options.interrupt) {
      result.stop_reason = "interrupted";
      break;
    }
    if (options.cancelled && options.cancelled()) {
      result.stop_reason = "cancelled";
      break;
    }
    // Room left in the context: the root takes one row, each draft node one more.
    uint32_t room = verifier_->context_length() - verifier_->committed();
    if (room == 0) {
      result.stop_reason = "context";
      break;
    }
    auto t0 = Clock::now();
    draft.n_nodes = 0;
    draft.vocab = vocab;
    if (proposer_) {
      uint32_t capacity = room - 1;  // the proposer caps it further at its max_nodes
      if (adaptive_) capacity = std::min(capacity, adaptive_->next_k());
      if (capacity > 0) proposer_->propose(sequence, capacity, *rng_, draft);
    }
    specd_draft_tree tree = draft.tree();
    if (draft.n_nodes > 0) {
      validate_tree(tree, vocab, "proposer '" + proposer_->name() + "'");
      check_tree_pairing(rule_->info(), tree, proposer_->name());
    }
    auto t1 = Clock::now();
    stats.draft_s += std::chrono::duration<double>(t1 - t0).count();

    const size_t rows = draft.n_nodes + 1;
    logits.resize(rows * vocab);
    hidden.resize(hidden_dim * rows);
    p.resize(rows * vocab);
    try {
      verifier_->verify(sequence.back(), tree, logits.data(), hidden_dim ? hidden.data() : nullptr);
      for (size_t r = 0; r < rows; ++r) {
        const std::span<float> row(logits.data() + r * vocab, vocab);
        mask_padding(row, static_cast<size_t>(tokenizer_->n_tokens()));
        transform_logits(row, sampling, std::span<double>(p.data() + r * vocab, vocab));
      }
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      // NaN logits, a backend failure: name the model they came from.
      throw Error("target " + config_.target.model + ": " + e.what());
    }
    auto t2 = Clock::now();
    stats.verify_s += std::chrono::duration<double>(t2 - t1).count();

    AcceptResult accepted;
    if (draft.n_nodes == 0) {
      accepted.next_token =
          static_cast<specd_token>(sample(std::span<const double>(p.data(), vocab), *rng_));
    } else {
      specd_target_dists dists{sizeof(specd_target_dists), static_cast<uint32_t>(rows), vocab,
                               p.data()};
      validate_target(dists, tree, "verifier");
      accepted = rule_->accept(tree, dists, *rng_);
    }
    auto t3 = Clock::now();
    stats.accept_s += std::chrono::duration<double>(t3 - t2).count();

    verifier_->commit(accepted.path);
    if (adaptive_)
      adaptive_->observe({draft.n_nodes, static_cast<uint32_t>(accepted.path.size()),
                          std::chrono::duration<double>(t1 - t0).count(),
                          std::chrono::duration<double>(t2 - t1).count(),
                          verifier_->last_overhead_s()});
    ++stats.rounds;
    stats.drafted += draft.n_nodes;
    stats.accepted += accepted.path.size();
    uint32_t depth = tree_depth(tree);
    if (stats.drafted_at.size() < depth) {
      stats.drafted_at.resize(depth, 0);
      stats.accepted_at.resize(depth, 0);
    }
    for (uint32_t d = 0; d < depth; ++d) {
      ++stats.drafted_at[d];
      if (d < accepted.path.size()) ++stats.accepted_at[d];
    }

    emitted.clear();
    for (int32_t node : accepted.path) emitted.push_back(draft.tokens[node - 1]);
    emitted.push_back(accepted.next_token);
    if (stats.rounds == 1) stats.first_token_s = seconds_since(start);
    for (int32_t token : emitted) {
      sequence.push_back(token);
      if (!emitter.push(token, result)) {
        going = false;
        break;
      }
    }
    if (going && proposer_) {
      // Features of the root and the accepted nodes, in sequence order.
      kept_hidden.resize(hidden_dim * (accepted.path.size() + 1));
      for (size_t i = 0; hidden_dim && i <= accepted.path.size(); ++i) {
        size_t row = i == 0 ? 0 : static_cast<size_t>(accepted.path[i - 1]);
        std::copy_n(hidden.data() + row * hidden_dim, hidden_dim,
                    kept_hidden.data() + i * hidden_dim);
      }
      std::vector<specd_token> accepted_tokens(emitted.begin(), emitted.end() - 1);
      proposer_->commit(accepted_tokens, accepted.next_token,
                        hidden_dim ? kept_hidden.data() : nullptr);
    }
  }
  emitter.finish(result);
  stats.generated_tokens = result.tokens.size() + (result.stop_reason == "eos" ? 1 : 0);
  stats.generate_s = seconds_since(generate_start);
  return result;
}

}  // namespace specd
