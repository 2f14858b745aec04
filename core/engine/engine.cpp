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
#include "engine/kv_cache_size.hpp"
#include "engine/model_service.hpp"
#include "engine/padding_mask.hpp"
#include "engine/plugin_checks.hpp"
#include "engine/plugin_params.hpp"
#include "engine/proposer.hpp"
#include "engine/sequence.hpp"
#include "engine/verifier.hpp"
#include "engine/verifier_factory.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/heads/head_model.hpp"
#include "models/kv_layout.hpp"
#include "models/llama_model.hpp"
#include "plugin/host_services.hpp"
#include "sampling/sample_row.hpp"
#include "sampling/sampling_transform.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {
Engine::Engine(const Config& config, const PluginRegistry& registry, EngineUse use)
    : config_(config), use_(use) {
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
    if (uses_local_target(config_)) {
      target_ = LlamaModel::load(std::move(target_file), *device_);
      target_->set_kv_dtype(kv_dtype(config_.target.kv_type.empty() ? config_.engine.kv_type
                                                                    : config_.target.kv_type));
    }
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    // The file's own problem, said where the configuration names the file.
    throw Error(config_.where("target.model") + ": " + e.what());
  }
  if (proposer_plugin) ask_target_for_head_features();
  // A scheduler's engine needs no verifier of its own over the local target (each sequence
  // has one): its KV cache for the whole context would be allocated for nothing.
  if (use_ == EngineUse::generate || !target_)
    verifier_ = make_verifier(config_, registry, target_.get(), *tokenizer_);
  if (tokenizer_->n_tokens() > static_cast<int32_t>(vocab_size()))
    throw Error(config_.target.model + ": the tokenizer has " +
                std::to_string(tokenizer_->n_tokens()) + " tokens but the model's output has " +
                std::to_string(vocab_size()));
  rng_ = std::make_unique<specd_rng>(config_.engine.seed);

  if (proposer_plugin && use_ == EngineUse::generate) {
    proposer_ = make_proposer(config_, registry);
    if (config_.proposer.k_auto) adaptive_ = std::make_unique<AdaptiveK>(AdaptiveKOptions{});
    rule_ = make_checked_rule(config_, registry, *proposer_plugin);
  }
}

void Engine::ask_target_for_head_features() {
  const std::string& path = config_.proposer.model;
  if (path.empty() || !is_gguf_file(path)) return;  // a proposer's own format: not a head
  std::vector<int32_t> layers;
  try {
    layers = head_target_layers(GgufFile::open(path));
  } catch (const Error& e) {
    throw Error(config_.where("proposer.model") + ": " + e.what());
  }
  if (layers.empty()) return;
  if (!target_)
    throw UsageError(config_.where("proposer.model") + ": " + path +
                     " takes the inputs of target layers as features, which only the built-in "
                     "verifier computes, not verifier '" +
                     config_.verifier.kind + "'");
  try {
    target_->set_feature_layers(layers);
  } catch (const UsageError& e) {
    throw UsageError(config_.where("proposer.model") + ": " + path + ": " + e.what());
  }
}

std::unique_ptr<Proposer> Engine::make_proposer(const Config& config,
                                                const PluginRegistry& registry) const {
  if (config.proposer.kind == "none") return nullptr;
  const LoadedPlugin* plugin = nullptr;
  try {
    plugin = &registry.require(config.proposer.kind, SPECD_KIND_PROPOSER);
  } catch (const UsageError& e) {
    throw UsageError(config.where("proposer.kind") + ": " + e.what());
  }
  TargetShape shape;
  shape.vocab_size = vocab_size();
  shape.hidden_dim = hidden_dim();
  shape.invariant_max_rows = device_->info().invariant_max_rows;
  ProposerSetup setup = proposer_setup(config, *tokenizer_, shape);
  const std::string target_backend =
      config.target.backend.empty() ? config.engine.backend : config.target.backend;
  // Where its models load (a per-sequence proposer plugin opens them again for each further
  // sequence): the run's backend and threads, sharing the target's device.
  setup.models = std::make_shared<ModelRun>();
  setup.models->registry = &registry;
  setup.models->default_backend =
      config.proposer.backend.empty() ? target_backend : config.proposer.backend;
  setup.models->threads = static_cast<uint32_t>(config.engine.threads);
  setup.models->shared = device_.get();
  setup.models->kv_dtype =
      kv_dtype(config.proposer.kv_type.empty() ? config.engine.kv_type : config.proposer.kv_type);
  ProposerConfig proposer_config = config.proposer;
  // k = "auto": the proposer is built for the longest draft; each round asks for what the
  // running estimates of acceptance and cost say pays best (0 = a plain round).
  if (config.proposer.k_auto) proposer_config.k = static_cast<int>(AdaptiveKOptions{}.k_max);
  try {
    return std::make_unique<Proposer>(*plugin, proposer_config, setup);
  } catch (const UsageError& e) {
    throw_located_proposer_error(config, e);
  }
}

std::unique_ptr<AcceptanceRule> Engine::make_rule(const Config& config,
                                                  const PluginRegistry& registry) const {
  if (config.proposer.kind == "none") return nullptr;
  return make_checked_rule(config, registry,
                           registry.require(config.proposer.kind, SPECD_KIND_PROPOSER));
}

LlamaModel& Engine::target() {
  if (!target_)
    throw Error("the engine has no local target model: its verifier is '" + config_.verifier.kind +
                "'");
  return *target_;
}
uint32_t Engine::invariant_rows() const {
  return device_->info().invariant_max_rows;
}

Engine::~Engine() = default;

uint32_t Engine::context_length() const {
  if (verifier_) return verifier_->context_length();
  // As the built-in verifier sizes its cache: [engine] context, at most the model's.
  const uint32_t model_ctx = static_cast<uint32_t>(target_->info().n_ctx);
  const uint32_t context = static_cast<uint32_t>(config_.engine.context);
  return context == 0 ? model_ctx : std::min(context, model_ctx);
}
uint32_t Engine::vocab_size() const {
  return verifier_ ? verifier_->vocab_size() : static_cast<uint32_t>(target_->info().vocab_size);
}
uint32_t Engine::hidden_dim() const {
  return verifier_ ? verifier_->hidden_dim() : static_cast<uint32_t>(target_->feature_dim());
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
    throw UsageError("the prompt is empty and the model (" + config_.target.model +
                     ") adds no BOS token to start from");
  return generate_tokens(tokens, options);
}

GenerationResult Engine::generate_tokens(const std::vector<int32_t>& prompt,
                                         const GenerateOptions& options) {
  if (!verifier_)
    throw Error("this engine over " + config_.target.model +
                " holds a scheduler's shared parts only (EngineUse::shared): it cannot generate "
                "by itself");
  if (proposer_ && !proposer_sequence_) proposer_sequence_ = proposer_->open();
  SequenceParts parts;
  parts.tokenizer = tokenizer_.get();
  parts.verifier = verifier_.get();
  parts.proposer = proposer_.get();
  parts.proposer_sequence = proposer_sequence_.get();
  parts.rule = rule_.get();
  parts.adaptive = adaptive_.get();
  parts.rng = rng_.get();
  parts.target_path = config_.target.model;
  Sequence sequence(parts, prompt, options.sampling ? *options.sampling : config_.sampling,
                    options.max_tokens.value_or(config_.sampling.max_tokens), options.on_text);
  sequence.start();
  while (!sequence.done()) {
    if (options.interrupt && *options.interrupt) {
      sequence.stop("interrupted");
      break;
    }
    if (options.cancelled && options.cancelled()) {
      sequence.stop("cancelled");
      break;
    }
    ProposeCall call;
    if (!sequence.prepare_round(call)) break;
    const auto t0 = std::chrono::steady_clock::now();
    if (call.capacity > 0) proposer_->propose(std::span<ProposeCall>(&call, 1));
    sequence.submit_round(
        call, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const uint64_t accepted_before = sequence.stats().accepted;
    sequence.end_round();
    if (options.on_round) {
      const size_t n = call.capacity > 0 && call.draft ? call.draft->n_nodes : 0;
      options.on_round(std::span<const int32_t>(n ? call.draft->tokens.data() : nullptr, n),
                       std::span<const int32_t>(n ? call.draft->parents.data() : nullptr, n),
                       sequence.stats().accepted - accepted_before);
    }
  }
  return sequence.finish();
}

}  // namespace specd
