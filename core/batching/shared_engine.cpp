#include "batching/shared_engine.hpp"

#include "acceptance/acceptance_rule.hpp"
#include "acceptance/labels.hpp"
#include "batching/refusal.hpp"
#include "common/error.hpp"
#include "engine/adaptive_k.hpp"
#include "engine/proposer.hpp"

namespace specd::batching {

SharedEngine::SharedEngine(const Config& config, const PluginRegistry& registry)
    : config_(config), registry_(registry) {}

SharedEngine::~SharedEngine() = default;

Config SharedEngine::config_for(const StrategyChoice& r) const {
  if (r.allow_lossy && !config_.acceptance.allow_lossy)
    throw Refusal(Refusal::Kind::invalid_request, "speculative.allow_lossy",
                  "'speculative.allow_lossy' is refused: the server's configuration does not "
                  "allow lossy rules ([acceptance] allow_lossy)");
  Config c = config_;
  bool rule_changed = false;
  if (r.proposer && *r.proposer != c.proposer.kind) {
    c.proposer.kind = *r.proposer;
    // The configured kind's own keys and model file do not apply to another kind, nor its
    // rule: the request's proposer takes its own default unless the request names one.
    c.proposer.params.clear();
    c.proposer.model.clear();
    if (!r.rule) {
      c.acceptance.rule.clear();
      c.acceptance.params.clear();
      rule_changed = true;
    }
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
  rule_changed = rule_changed || r.rule;
  // A rule the request chose (by name, or as its proposer's default) is lossy only when the
  // request says so; the configured rule keeps the configuration's permission.
  c.acceptance.allow_lossy = config_.acceptance.allow_lossy && (r.allow_lossy || !rule_changed);
  return c;
}

Engine& SharedEngine::engine() {
  // The shared parts only: each sequence has its own batch verifier, proposer and rule.
  if (!engine_) engine_ = std::make_unique<Engine>(config_, registry_, EngineUse::shared);
  return *engine_;
}

Engine& SharedEngine::get(const StrategyChoice& r) {
  strategy(r);
  return engine();
}

LlamaModel& SharedEngine::target() {
  return engine().target();
}

Strategy& SharedEngine::strategy(const StrategyChoice& r) {
  Engine& shared = engine();
  Config c = config_for(r);
  const std::string key = c.proposer.kind + "|" +
                          (c.proposer.k_auto ? std::string("auto") : std::to_string(c.proposer.k)) +
                          "|" + c.acceptance.rule + "|" + (c.acceptance.allow_lossy ? "lossy" : "");
  for (auto it = strategies_.begin(); it != strategies_.end(); ++it) {
    if (it->key == key) {
      strategies_.splice(strategies_.begin(), strategies_, it);
      return strategies_.front();
    }
  }
  Strategy s;
  s.key = key;
  try {
    s.proposer = shared.make_proposer(c, registry_);
    s.rule = shared.make_rule(c, registry_);
    if (s.proposer) s.proposer_name = s.proposer->name();
  } catch (const UsageError& e) {
    if (r.configured()) throw;  // the configuration's own problem, located in the file
    std::string param = r.rule       ? "speculative.rule"
                        : r.proposer ? "speculative.proposer"
                                     : "speculative";
    // The message leads with where the configuration set the key; the request set it here.
    std::string message = e.what();
    for (const auto& [setting, location] : c.locations)
      if (message.rfind(location + ": ", 0) == 0) {
        message.erase(0, location.size() + 2);
        break;
      }
    throw Refusal(Refusal::Kind::invalid_request, param, "'" + param + "': " + message);
  }
  if (s.rule) {
    s.rule_name = s.rule->name();
    s.rule_label = label_name(s.rule->label());
  }
  s.k_auto = c.proposer.plans_k();
  s.config = std::move(c);
  // Drop the least recently used idle strategies beyond max_engines (one still running a
  // sequence stays until it is idle).
  const size_t keep = static_cast<size_t>(config_.server.max_engines);
  for (auto it = strategies_.end(); strategies_.size() >= keep && it != strategies_.begin();) {
    --it;
    if (it->lent == 0) it = strategies_.erase(it);
  }
  strategies_.push_front(std::move(s));
  return strategies_.front();
}

std::unique_ptr<ProposerSequence> SharedEngine::take_proposer(Strategy& s) {
  std::unique_ptr<ProposerSequence> p;
  if (s.proposer) {
    if (!s.idle.empty()) {
      p = std::move(s.idle.back());
      s.idle.pop_back();
    } else {
      p = s.proposer->open();
    }
  }
  ++s.lent;
  return p;
}

void SharedEngine::give_back(Strategy& s, std::unique_ptr<ProposerSequence> sequence) {
  --s.lent;
  if (sequence) s.idle.push_back(std::move(sequence));
}

void SharedEngine::check_sampling(const Strategy& s, const GenerationRequest& r) const {
  if (s.rule_label != "greedy-exact" || r.sampling.temperature == 0) return;
  if (r.strategy.allow_lossy && config_.acceptance.allow_lossy) return;
  throw Refusal(Refusal::Kind::invalid_request, "temperature",
                "'temperature' must be 0 with rule '" + s.rule_name +
                    "': it is lossless only for greedy decoding (choose an exact rule in "
                    "speculative.rule, or allow lossy output)");
}

}  // namespace specd::batching
