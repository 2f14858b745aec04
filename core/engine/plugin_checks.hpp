// The checks of a configuration's plugins that `run` makes before generating, shared with
// `check-config` so that a configuration check-config calls ok is not refused by run.
#pragma once

#include <memory>
#include <string>

#include "acceptance/acceptance_rule.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "plugin/registry.hpp"

namespace specd {

// Rethrows a proposer's UsageError located in the configuration: the plugin locates the
// parameters it reads (their locations are in the message); a problem with its model file
// is located at [proposer] model, anything else about the section at [proposer] kind.
[[noreturn]] void throw_located_proposer_error(const Config& config, const UsageError& e);

// The acceptance rule for a proposer plugin: [acceptance] rule, else the proposer's
// default, else exact-match; created with its parameters (which the plugin checks), then
// checked against allow_lossy and paired with what the proposer declares (q, trees).
// Throws UsageError located at the key concerned.
std::unique_ptr<AcceptanceRule> make_checked_rule(const Config& config,
                                                  const PluginRegistry& registry,
                                                  const LoadedPlugin& proposer);

// check-config's plugin checks, loading no model: the proposer plugin and its parameters
// (the plugin is created with model opens refused, so its checks run up to the point where
// it would open its model), and the rule as make_checked_rule makes it. With proposer kind
// "none" nothing is checked ([acceptance] is unused then). Throws UsageError, located.
void check_config_plugins(const Config& config, const PluginRegistry& registry);

}  // namespace specd
