// The one engine every sequence shares, and the strategies requests ask for over it.
//
// One Engine holds what every sequence shares: backend, device, tokenizer and the target
// model, loaded ONCE (target()). Each (proposer, k, rule, allow_lossy) setting a request
// names gets a Strategy: its configuration, an acceptance rule and ONE proposer (both shared
// by its sequences: the worker runs one at a time), which drafts for all of them in one call
// per step; each running sequence holds a proposer sequence, reused by the next (its begin()
// starts it afresh). A setting never loads another target; at most [server] max_engines
// strategies are kept, the least recently used idle one dropped first.
//
// engine(), get(), strategy(), take/give_back and target() are for the scheduler's worker
// alone (or code it runs, e.g. Scheduler::run_exclusive); config_for() and check_sampling()
// only read the configuration and may be called from any thread.
#pragma once

#include <list>
#include <memory>
#include <string>
#include <vector>

#include "batching/generation_request.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine/step_cost.hpp"
#include "plugin/registry.hpp"

namespace specd {
class AcceptanceRule;
class AdaptiveK;
class LlamaModel;
class Proposer;
class ProposerSequence;
}  // namespace specd

namespace specd::batching {

struct Strategy {
  std::string key;
  Config config;                                        // the server's, with the setting applied
  std::unique_ptr<AcceptanceRule> rule;                 // null for proposer "none"
  std::unique_ptr<Proposer> proposer;                   // null for proposer "none"
  std::vector<std::unique_ptr<ProposerSequence>> idle;  // proposer sequences not in use
  // k = "auto": adaptive-k states not in use. A finished sequence's estimates (acceptance of
  // this pair, draft cost) start the next sequence's instead of being learnt anew.
  std::vector<std::unique_ptr<AdaptiveK>> idle_adaptive;
  int lent = 0;          // sequences running with this strategy
  DraftTime draft_time;  // its proposer's calls over a step's sequences (the step plan)
  std::string proposer_name = "none", rule_name, rule_label;
  bool k_auto = false;
};

class SharedEngine {
 public:
  SharedEngine(const Config& config, const PluginRegistry& registry);
  ~SharedEngine();

  // The configuration a request's choice gives: the server's with the request's proposer,
  // k and rule. Throws Refusal (invalid_request, "speculative.allow_lossy") for a lossy
  // request the server does not allow.
  Config config_for(const StrategyChoice& choice) const;
  // The shared engine (target, tokenizer, device), loaded on first use with the server's
  // configuration.
  Engine& engine();
  // engine(), once the request's settings are known to build (strategy()).
  Engine& get(const StrategyChoice& choice);
  // The strategy for those settings, built on first use (one proposer instance is made to
  // check them). A UsageError from building a request's choice (an unknown proposer or
  // rule, a lossy rule without allow_lossy) becomes a Refusal naming the field; one from the
  // configured strategy is the configuration's and is rethrown as it is.
  Strategy& strategy(const StrategyChoice& choice);
  // A proposer sequence of the strategy (null for "none"): an idle one, or a new one.
  std::unique_ptr<ProposerSequence> take_proposer(Strategy& strategy);
  // Returns it (null: a sequence that failed mid-round, not reused).
  void give_back(Strategy& strategy, std::unique_ptr<ProposerSequence> sequence);
  // The target model every sequence runs on (for exclusive use through the scheduler).
  LlamaModel& target();
  // Refuses (Refusal naming temperature) sampling the strategy's rule makes no claim for: a
  // greedy-exact rule at temperature > 0, unless the request and the server allow lossy.
  void check_sampling(const Strategy& strategy, const GenerationRequest& request) const;
  const Config& config() const { return config_; }
  size_t size() const { return strategies_.size(); }

 private:
  const Config& config_;
  const PluginRegistry& registry_;
  std::unique_ptr<Engine> engine_;
  std::list<Strategy> strategies_;  // most recently used first
};

}  // namespace specd::batching
