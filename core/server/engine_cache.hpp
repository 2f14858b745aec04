// Engines for the per-request `speculative` settings: one per (proposer, k, rule,
// allow_lossy), at most [server] max_engines kept, the least recently used dropped first
// (never the configured engine: /v1/verify sessions hold KV caches on its target model).
// get() is for the scheduler's worker alone; config_for() and check_sampling() only read
// the configuration and may be called from any thread.
#pragma once

#include <list>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "engine/engine.hpp"
#include "plugin/registry.hpp"
#include "server/request.hpp"

namespace specd::server {

class EngineCache {
 public:
  EngineCache(const Config& config, const PluginRegistry& registry);

  // The configuration a request's settings give: the server's with the request's proposer,
  // k and rule. Throws RequestError (400) for a lossy request the server does not allow.
  Config config_for(const SpeculativeRequest& request) const;
  // The engine for those settings, built on first use. A UsageError from building it (an
  // unknown proposer or rule, a lossy rule without allow_lossy) becomes a RequestError.
  Engine& get(const SpeculativeRequest& request);
  // Refuses (400 naming temperature) sampling the engine's rule makes no claim for: a
  // greedy-exact rule at temperature > 0, unless the request and the server allow lossy.
  void check_sampling(const Engine& engine, const CompletionRequest& request) const;
  size_t size() const { return engines_.size(); }

 private:
  struct Entry {
    std::string key;
    std::unique_ptr<Engine> engine;
  };
  const Config& config_;
  const PluginRegistry& registry_;
  std::list<Entry> engines_;    // most recently used first
  std::string configured_key_;  // the configuration's own engine, never dropped
};

}  // namespace specd::server
