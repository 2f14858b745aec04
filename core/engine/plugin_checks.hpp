// The checks of a configuration's plugins that `run` makes before generating, shared with
// `check-config` so that a configuration check-config calls ok is not refused by run.
#pragma once

#include <memory>
#include <string>

#include "acceptance/acceptance_rule.hpp"
#include "acceptance/pairing.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/proposer.hpp"
#include "plugin/registry.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {

// Rethrows a proposer's UsageError located in the configuration: the plugin locates the
// parameters it reads (their locations are in the message); a problem with its model file
// is located at [proposer] model, anything else about the section at [proposer] kind.
[[noreturn]] void throw_located_proposer_error(const Config& config, const UsageError& e);

// A greedy-exact rule keeps the output distribution only at temperature 0. At temperature
// > 0 it is lossy, and refused unless [acceptance] allow_lossy = true. Returns "" when the
// pair is fine, else the problem (unlocated; the caller says where the temperature is set).
// `specd serve` makes the same check per request with the request's temperature.
std::string greedy_temperature_problem(const RuleInfo& rule, double temperature, bool allow_lossy);

// The same for a configuration: throws UsageError located at [sampling] temperature (its
// file:line:col, or the file when the default 1.0 applies).
void check_rule_temperature(const Config& config, const RuleInfo& rule);

// What the target looks like to a proposer, from the loaded model (run) or from its file's
// metadata (check-config).
struct TargetShape {
  uint32_t vocab_size = 0;          // the output's rows (token_embd.weight's)
  uint32_t hidden_dim = 0;          // embedding_length
  uint32_t invariant_max_rows = 0;  // the device's batch-invariant rows
};

// The setup a proposer is created with, the same for run and check-config: the target's
// vocabulary (token texts padded to vocab_size), its hidden width, draft nodes up to the
// device's batch-invariant rows less the root, and the run's sampling parameters.
ProposerSetup proposer_setup(const Config& config, const Tokenizer& tokenizer,
                             const TargetShape& target);

// The acceptance rule for a proposer plugin: [acceptance] rule, else the proposer's
// default, else exact-match; created with its parameters (which the plugin checks), then
// checked against allow_lossy and the temperature (check_rule_temperature) and paired with what the
// proposer declares (q, trees). Throws UsageError located at the key concerned.
std::unique_ptr<AcceptanceRule> make_checked_rule(const Config& config,
                                                  const PluginRegistry& registry,
                                                  const LoadedPlugin& proposer);

// check-config's plugin checks, loading no model: the proposer plugin and its parameters
// (the plugin is created with model opens refused, so its checks run up to the point where
// it would open its model), and the rule as make_checked_rule makes it. With proposer kind
// "none" nothing is checked ([acceptance] is unused then). Throws UsageError, located.
void check_config_plugins(const Config& config, const PluginRegistry& registry);

}  // namespace specd
