// The verifier a configuration names: [verifier] kind = "target" (the built-in, over the
// run's loaded target model) or a verifier plugin (specd-verify-<name>.so, e.g. "remote"),
// created with the section's other keys and checked against the local tokenizer.
#pragma once

#include <memory>

#include "config/config.hpp"
#include "engine/verifier.hpp"
#include "plugin/registry.hpp"

namespace specd {

class Tokenizer;

// True when the configuration's verifier runs the [target] model in this process (the
// built-in): only then does the engine load the target's weights (a plugin verifier needs
// only its tokenizer).
bool uses_local_target(const Config& config);

// The plugin for [verifier] kind, or nullptr for the built-in. Throws UsageError located
// at verifier.kind for an unknown kind (with a suggestion when one is close).
const LoadedPlugin* find_verifier_plugin(const Config& config, const PluginRegistry& registry);

// Creates the verifier. `target` is the loaded target model (the built-in needs it; null
// otherwise). A plugin's vocabulary (size and digest) must match `tokenizer`'s: a mismatch
// is a UsageError naming both sides. Errors name the key or the plugin concerned.
std::unique_ptr<Verifier> make_verifier(const Config& config, const PluginRegistry& registry,
                                        LlamaModel* target, const Tokenizer& tokenizer);

}  // namespace specd
