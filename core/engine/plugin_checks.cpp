#include "engine/plugin_checks.hpp"

#include <cstdio>
#include <memory>
#include <optional>

#include "acceptance/labels.hpp"
#include "backend/backend.hpp"
#include "common/error.hpp"
#include "engine/backend_selection.hpp"
#include "engine/model_service.hpp"
#include "engine/plugin_params.hpp"
#include "engine/proposer.hpp"
#include "engine/verifier_factory.hpp"
#include "gguf/gguf_reader.hpp"

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

// The target's shape from its file's metadata, as the model loader reads it; a field is 0
// when its key is missing (run reports that file, not check-config).
TargetShape target_shape_of(const GgufFile& target) {
  TargetShape shape;
  if (const GgufTensor* embd = target.tensor("token_embd.weight"); embd && embd->n_dims == 2)
    shape.vocab_size = static_cast<uint32_t>(embd->ne[1]);
  if (auto arch = target.get_string_opt("general.architecture"))
    shape.hidden_dim = target.get_u32_opt(*arch + ".embedding_length").value_or(0);
  return shape;
}

// The batch-invariant rows of the backend run would choose for the target; 0 when it
// cannot run here (run reports that). An unknown backend id is a configuration mistake.
uint32_t backend_invariant_rows(const Config& config, const PluginRegistry& registry) {
  const bool own = !config.target.backend.empty();
  const std::string name = own ? config.target.backend : config.engine.backend;
  const LoadedPlugin* plugin = nullptr;
  try {
    plugin = &select_backend(registry, name);
  } catch (const UsageError& e) {
    throw UsageError(config.where(own ? "target.backend" : "engine.backend") + ": " + e.what());
  } catch (const Error&) {
    return 0;
  }
  try {
    DeviceOptions options;
    options.threads = static_cast<uint32_t>(config.engine.threads);
    return Backend(*plugin).open(options)->info().invariant_max_rows;
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace

std::string greedy_temperature_problem(const RuleInfo& rule, double temperature, bool allow_lossy) {
  if (rule.label != SPECD_LABEL_GREEDY_EXACT || temperature == 0 || allow_lossy) return "";
  char t[32];
  std::snprintf(t, sizeof t, "%g", temperature);
  return "rule '" + rule.name + "' is greedy-exact: it keeps the output distribution only at " +
         "temperature 0, and at temperature " + t +
         " it is lossy; set temperature = 0, choose a rule exact at every temperature " +
         "(rejection, exact-match), or set [acceptance] allow_lossy = true";
}

void check_rule_temperature(const Config& config, const RuleInfo& rule) {
  const std::string problem =
      greedy_temperature_problem(rule, config.sampling.temperature, config.acceptance.allow_lossy);
  if (problem.empty()) return;
  const bool set = config.locations.count("sampling.temperature") != 0;
  throw UsageError(config.where("sampling.temperature") + ": " +
                   (set ? "" : "[sampling] temperature is 1 when not set; ") + problem);
}

ProposerSetup proposer_setup(const Config& config, const Tokenizer& tokenizer,
                             const TargetShape& target) {
  ProposerSetup setup;
  setup.vocab_size = target.vocab_size;
  setup.n_tokens = static_cast<uint32_t>(tokenizer.n_tokens());
  setup.hidden_dim = target.hidden_dim;
  // The verify pass holds the root plus the draft; keep it within the rows the device
  // computes batch-invariantly, so greedy output never depends on the draft.
  setup.max_nodes = target.invariant_max_rows > 0 ? target.invariant_max_rows - 1 : 0;
  setup.target_path = config.target.model;
  for (int32_t i = 0; i < tokenizer.n_tokens(); ++i)
    setup.token_texts.push_back(tokenizer.token_text(i));
  setup.token_texts.resize(setup.vocab_size);
  setup.tokenizer = &tokenizer;
  setup.sampling.temperature = config.sampling.temperature;
  setup.sampling.top_k = config.sampling.top_k;
  setup.sampling.top_p = config.sampling.top_p;
  setup.sampling.min_p = config.sampling.min_p;
  return setup;
}

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
  check_rule_temperature(config, rule->info());
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

  // The proposer gets run's setup, with the target's shape read from its metadata (nothing
  // is loaded). Without a readable target, or a backend that runs here, there is nothing
  // to check it against: run reports those.
  const uint32_t invariant_rows = backend_invariant_rows(config, registry);
  if (invariant_rows == 0) return;
  ProposerSetup setup;
  std::optional<Tokenizer> tokenizer;  // the setup's text service reads it
  try {
    const GgufFile target = GgufFile::open(config.target.model);
    TargetShape shape = target_shape_of(target);
    shape.invariant_max_rows = invariant_rows;
    tokenizer.emplace(Tokenizer::from_gguf(target));
    if (shape.vocab_size < static_cast<uint32_t>(tokenizer->n_tokens())) return;
    setup = proposer_setup(config, *tokenizer, shape);
  } catch (const Error&) {
    return;
  }
  auto no_models = std::make_shared<ModelRun>();  // no registry: opens refused, recorded
  setup.models = no_models;
  try {
    Proposer checked(proposer, config.proposer, setup);
  } catch (const UsageError& e) {
    if (!no_models->refused_open) throw_located_proposer_error(config, e);
  } catch (const Error&) {
    // Past its parameter checks the proposer opens its model, which is refused here; any
    // other runtime failure is run's to report with the models loaded.
    if (!no_models->refused_open) throw;
  }
}

}  // namespace specd
