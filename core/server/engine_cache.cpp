#include "server/engine_cache.hpp"

#include "common/error.hpp"

namespace specd::server {

EngineCache::EngineCache(const Config& config, const PluginRegistry& registry)
    : config_(config), registry_(registry) {}

Config EngineCache::config_for(const SpeculativeRequest& r) const {
  if (r.allow_lossy && !config_.acceptance.allow_lossy)
    throw RequestError(400, "speculative.allow_lossy",
                       "'speculative.allow_lossy' is refused: the server's configuration (" +
                           config_.where("acceptance.allow_lossy") +
                           ") does not allow lossy rules");
  Config c = config_;
  if (r.proposer && *r.proposer != c.proposer.kind) {
    c.proposer.kind = *r.proposer;
    c.proposer.params.clear();  // the configured kind's own keys do not apply to another
  }
  if (r.k) {
    c.proposer.k = *r.k;
    c.proposer.k_auto = false;
  }
  if (r.k_auto) c.proposer.k_auto = true;
  if (r.rule && *r.rule != c.acceptance.rule) {
    c.acceptance.rule = *r.rule;
    c.acceptance.params.clear();
  }
  // A rule the request names is lossy only when the request says so; the configured rule
  // keeps the configuration's permission.
  c.acceptance.allow_lossy = config_.acceptance.allow_lossy && (r.allow_lossy || !r.rule);
  return c;
}

Engine& EngineCache::get(const SpeculativeRequest& r) {
  Config c = config_for(r);
  std::string key = c.proposer.kind + "|" +
                    (c.proposer.k_auto ? std::string("auto") : std::to_string(c.proposer.k)) + "|" +
                    c.acceptance.rule + "|" + (c.acceptance.allow_lossy ? "lossy" : "");
  if (configured_key_.empty() && !r.proposer && !r.k && !r.k_auto && !r.rule && !r.allow_lossy)
    configured_key_ = key;
  for (auto it = engines_.begin(); it != engines_.end(); ++it) {
    if (it->key == key) {
      engines_.splice(engines_.begin(), engines_, it);
      return *engines_.front().engine;
    }
  }
  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(c, registry_);
  } catch (const UsageError& e) {
    const bool configured = !r.proposer && !r.k && !r.k_auto && !r.rule && !r.allow_lossy;
    if (configured) throw;  // the configuration's own problem, located in the file
    std::string param = r.rule       ? "speculative.rule"
                        : r.proposer ? "speculative.proposer"
                                     : "speculative";
    throw RequestError(400, param, "'" + param + "': " + e.what());
  }
  if (engines_.size() >= static_cast<size_t>(config_.server.max_engines)) {
    // The configured engine stays: /v1/verify sessions hold caches on its target model.
    auto victim = std::prev(engines_.end());
    if (victim->key == configured_key_ && victim != engines_.begin()) victim = std::prev(victim);
    if (victim->key != configured_key_) engines_.erase(victim);
  }
  engines_.push_front({key, std::move(engine)});
  return *engines_.front().engine;
}

void EngineCache::check_sampling(const Engine& engine, const CompletionRequest& r) const {
  if (engine.rule_label() != "greedy-exact" || r.sampling.temperature == 0) return;
  if (r.speculative.allow_lossy && config_.acceptance.allow_lossy) return;
  throw RequestError(400, "temperature",
                     "'temperature' must be 0 with rule '" + engine.rule_name() +
                         "': it is lossless only for greedy decoding (choose an exact rule in "
                         "speculative.rule, or allow lossy output)");
}

}  // namespace specd::server
