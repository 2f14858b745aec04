#include "engine/verifier_factory.hpp"

#include "common/error.hpp"
#include "config/did_you_mean.hpp"
#include "engine/kv_cache_size.hpp"
#include "engine/plugin_params.hpp"
#include "engine/vocab_digest.hpp"
#include "models/llama_model.hpp"
#include "plugin/host_services.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {
namespace {

constexpr const char* kBuiltIn = "target";

std::unique_ptr<Verifier> make_builtin(const Config& config, LlamaModel& target) {
  try {
    return make_target_verifier(target, static_cast<uint32_t>(config.engine.context));
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    // The KV cache is sized by the context: say which, from where, and what would fit.
    const ModelInfo& info = target.info();
    const uint32_t context = static_cast<uint32_t>(config.engine.context);
    const uint64_t tokens =
        context == 0 ? static_cast<uint64_t>(info.n_ctx) : std::min<uint64_t>(context, info.n_ctx);
    throw Error(kv_cache_error(info, tokens, config.engine.context, config.where("engine.context"),
                               e.what()));
  }
}

// A plugin's vocabulary must be the tokenizer's: ids mean texts on both sides.
void check_vocabulary(const Config& config, const Verifier& verifier, const Tokenizer& tokenizer) {
  const std::string local = "the local tokenizer (" + config.target.model + ", " +
                            std::to_string(tokenizer.n_tokens()) + " tokens";
  if (verifier.vocab_size() < static_cast<uint32_t>(tokenizer.n_tokens()))
    throw UsageError(config.where("verifier.kind") + ": " + verifier.what() + " scores " +
                     std::to_string(verifier.vocab_size()) + " tokens, fewer than " + local +
                     "): the drafts and the verifier must share a vocabulary");
  if (verifier.vocab_digest() == 0) return;  // a plugin that cannot tell
  const uint64_t mine = vocab_digest(tokenizer);
  if (verifier.vocab_digest() != mine)
    throw UsageError(config.where("verifier.kind") + ": " + verifier.what() +
                     " has another vocabulary (digest " + digest_hex(verifier.vocab_digest()) +
                     ") than " + local + ", digest " + digest_hex(mine) +
                     "): the drafts and the verifier must share a vocabulary");
}

}  // namespace

bool uses_local_target(const Config& config) {
  return config.verifier.kind == kBuiltIn;
}

const LoadedPlugin* find_verifier_plugin(const Config& config, const PluginRegistry& registry) {
  if (uses_local_target(config)) return nullptr;
  if (const LoadedPlugin* p = registry.find(config.verifier.kind, SPECD_KIND_VERIFIER)) return p;
  std::vector<std::string> names{kBuiltIn};
  for (const LoadedPlugin* p : registry.of_kind(SPECD_KIND_VERIFIER)) names.push_back(p->name);
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  const std::string close = did_you_mean(config.verifier.kind, names);
  std::string message =
      config.where("verifier.kind") + ": unknown verifier '" + config.verifier.kind + "'" +
      (close.empty() ? "" : " (did you mean '" + close + "'?)") + "; known: " + known +
      " (plugins: specd-verify-<name>.so on the plugin " + "search path, see `specd plugins`)";
  for (const PluginLoadError& e : registry.errors()) message += "\n  note: " + e.message;
  throw UsageError(message);
}

std::unique_ptr<Verifier> make_verifier(const Config& config, const PluginRegistry& registry,
                                        LlamaModel* target, const Tokenizer& tokenizer) {
  const LoadedPlugin* plugin = find_verifier_plugin(config, registry);
  if (!plugin) {
    if (!target) throw Error("the built-in target verifier needs the loaded target model");
    return make_builtin(config, *target);
  }
  const auto* vtable = static_cast<const specd_verifier_vtable*>(plugin->vtable);
  const std::string what = "verifier '" + plugin->name + "'";
  if (vtable->struct_size < offsetof(specd_verifier_vtable, commit) + sizeof(vtable->commit))
    throw Error(plugin->path + ": " + what + ": its vtable is too small");
  PluginParams params(config.verifier.params, plugin->abi_minor);
  void* object = nullptr;
  try {
    throw_if_error(vtable->create(host_table(), params.raw(), config.target.model.c_str(), &object),
                   what);
  } catch (const UsageError& e) {
    // The plugin names the keys it refuses with their locations; otherwise say the section.
    const std::string text = e.what();
    for (const PluginParam& p : config.verifier.params)
      if (text.find(p.location) != std::string::npos) throw;
    throw UsageError(config.where("verifier.kind") + ": " + text);
  }
  if (!object) throw Error(what + " (" + plugin->path + ") created no object");
  auto verifier = make_plugin_verifier(vtable, object, what);
  check_vocabulary(config, *verifier, tokenizer);
  return verifier;
}

}  // namespace specd
