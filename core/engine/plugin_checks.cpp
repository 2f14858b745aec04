#include "engine/plugin_checks.hpp"

#include "acceptance/pairing.hpp"
#include "common/error.hpp"
#include "engine/plugin_params.hpp"
#include "engine/proposer.hpp"
#include "engine/verifier_factory.hpp"
#include "gguf/gguf_reader.hpp"
#include "plugin/model_service.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {
namespace {

const LoadedPlugin& require_located(const Config& config, const PluginRegistry& registry,
                                    const std::string& name, specd_plugin_kind kind,
                                    const std::string& key) {
  try {
    return registry.require(name, kind);
  } catch (const UsageError& e) {
    throw UsageError(config.where(key) + ": " + e.what());
  }
}

}  // namespace

void throw_located_proposer_error(const Config& config, const UsageError& e) {
  const std::string what = e.what();
  for (const auto& [key, location] : config.locations)
    if (key.rfind("proposer.", 0) == 0 && what.find(location) != std::string::npos) throw e;
  const bool about_model =
      !config.proposer.model.empty() && what.find(config.proposer.model) != std::string::npos;
  throw UsageError(config.where(about_model ? "proposer.model" : "proposer.kind") + ": " + what);
}

std::unique_ptr<AcceptanceRule> make_checked_rule(const Config& config,
                                                  const PluginRegistry& registry,
                                                  const LoadedPlugin& proposer) {
  const auto* vtable = static_cast<const specd_proposer_vtable*>(proposer.vtable);
  std::string rule_name = config.acceptance.rule;
  if (rule_name.empty() && vtable->default_rule) rule_name = vtable->default_rule;
  if (rule_name.empty()) rule_name = "exact-match";
  const LoadedPlugin& plugin =
      require_located(config, registry, rule_name, SPECD_KIND_ACCEPTANCE, "acceptance.rule");
  PluginParams params(config.acceptance.params, plugin.abi_minor);
  auto rule = std::make_unique<AcceptanceRule>(plugin, params.raw());
  // Where the rule was chosen (the file, when it is the proposer's default).
  const std::string at = config.where("acceptance.rule") + ": ";
  try {
    check_lossy_allowed(rule->info(), config.acceptance.allow_lossy);
  } catch (const UsageError& e) {
    throw UsageError(at + e.what());
  }
  DraftShape shape;
  shape.proposer = proposer.name;
  shape.has_q = vtable->flags & SPECD_PROPOSER_PROVIDES_Q;
  shape.is_tree = vtable->flags & SPECD_PROPOSER_TREES;
  // The scheme is known per tree; the per-round check catches a mismatch.
  shape.scheme = shape.has_q ? SPECD_SIBLINGS_IID : SPECD_SIBLINGS_DETERMINISTIC;
  try {
    check_pairing(rule->info(), shape);
  } catch (const UsageError& e) {
    throw UsageError(at + e.what());
  }
  return rule;
}

void check_config_plugins(const Config& config, const PluginRegistry& registry) {
  // The verifier's kind (its plugin is not created: a remote one would connect).
  find_verifier_plugin(config, registry);
  if (config.proposer.kind == "none") return;
  const LoadedPlugin& proposer =
      require_located(config, registry, config.proposer.kind, SPECD_KIND_PROPOSER, "proposer.kind");
  make_checked_rule(config, registry, proposer);

  // The proposer sees the target's vocabulary, read from its metadata (nothing is loaded).
  // Without a readable target there is nothing to check it against: run reports the target.
  ProposerSetup setup;
  try {
    const GgufFile target = GgufFile::open(config.target.model);
    const Tokenizer tokenizer = Tokenizer::from_gguf(target);
    for (int32_t i = 0; i < tokenizer.n_tokens(); ++i)
      setup.token_texts.push_back(tokenizer.token_text(i));
    // Feature proposers (EAGLE, MTP, Medusa) need the target's hidden width.
    if (auto arch = target.get_string_opt("general.architecture"))
      setup.hidden_dim = target.get_u32_opt(*arch + ".embedding_length").value_or(0);
  } catch (const Error&) {
    return;
  }
  setup.vocab_size = static_cast<uint32_t>(setup.token_texts.size());
  setup.max_nodes = 63;  // the verify pass's batch-invariant rows, less the root
  setup.target_path = config.target.model;
  setup.sampling.temperature = config.sampling.temperature;
  setup.sampling.top_k = config.sampling.top_k;
  setup.sampling.top_p = config.sampling.top_p;
  setup.sampling.min_p = config.sampling.min_p;
  ModelCheckScope no_models;
  try {
    Proposer checked(proposer, config.proposer, setup);
  } catch (const UsageError& e) {
    if (!no_models.refused_open()) throw_located_proposer_error(config, e);
  } catch (const Error&) {
    // Past its parameter checks the proposer opens its model, which is refused here; any
    // other runtime failure is run's to report with the models loaded.
    if (!no_models.refused_open()) throw;
  }
}

}  // namespace specd
