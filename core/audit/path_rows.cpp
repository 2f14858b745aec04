#include "audit/path_rows.hpp"

#include <cmath>
#include <limits>
#include <memory>

#include "common/error.hpp"

namespace specd {
namespace {

// The mask of path_rows.hpp over the full sequence (committed tokens, then the draft path).
bool banned(specd_token y, const std::vector<specd_token>& committed,
            std::span<const specd_token> path) {
  const size_t generated = committed.size() - 1 + path.size();
  const specd_token last = path.empty() ? committed.back() : path.back();
  if ((static_cast<size_t>(y) + generated + static_cast<size_t>(last)) % 3 == 0) return true;
  int seen = 0;
  for (size_t i = 1; i < committed.size(); ++i) seen += committed[i] == y;
  for (specd_token t : path) seen += t == y;
  return seen >= 2;
}

}  // namespace

std::vector<std::string> audit_constraint_names() {
  return {"none", "mask", "mask-target", "penalties", "all"};
}

AuditConstraint audit_constraint(const std::string& name) {
  AuditConstraint c;
  c.name = name;
  PenaltyParams penalties;
  penalties.presence = 0.5;
  penalties.frequency = 0.3;
  penalties.repeat = 1.3;
  penalties.repeat_last_n = -1;
  penalties.bias = {{0, 0.8f}};
  if (name == "none") return c;
  if (name == "mask") {
    c.mask_target = c.mask_draft = true;
  } else if (name == "mask-target") {
    c.mask_target = true;
  } else if (name == "penalties") {
    c.penalties = penalties;
  } else if (name == "all") {
    c.mask_target = true;
    c.penalties = penalties;
  } else {
    std::string known;
    for (const std::string& n : audit_constraint_names()) known += (known.empty() ? "" : ", ") + n;
    throw UsageError("unknown audit constraint '" + name + "' (known: " + known + ")");
  }
  return c;
}

std::vector<AuditConstraint> default_audit_constraints() {
  return {audit_constraint("none"), audit_constraint("mask"), audit_constraint("all")};
}

PathRows::PathRows(const MarkovModel& model, const SamplingParams& sampling,
                   AuditConstraint constraint)
    : model_(model), sampling_(sampling), constraint_(std::move(constraint)) {
  for (uint32_t a = 0; a < model.vocab; ++a) {
    plain_p_.push_back(transform_probs(model.target[a], sampling));
    // A two-vocabulary table's draft is read by translated_drafts.hpp, not here.
    if (!model.two_vocabularies()) plain_q_.push_back(transform_probs(model.draft[a], sampling));
  }
}

std::vector<specd_token> PathRows::key(const std::vector<specd_token>& committed) const {
  if (constraint_.path_dependent()) return committed;
  return {committed.back()};
}

std::vector<double> PathRows::row(const std::vector<std::vector<double>>& table, bool mask,
                                  const Penalties* penalties,
                                  const std::vector<specd_token>& committed,
                                  std::span<const specd_token> path) const {
  const specd_token last = path.empty() ? committed.back() : path.back();
  const std::vector<double>& probs = table[static_cast<size_t>(last)];
  std::vector<float> logits(probs.size());
  for (size_t y = 0; y < probs.size(); ++y)
    logits[y] = probs[y] > 0 ? static_cast<float>(std::log(probs[y]))
                             : -std::numeric_limits<float>::infinity();
  if (penalties) penalties->apply(logits, path);
  if (mask) {
    std::vector<float> masked = logits;
    bool any = false;
    for (size_t y = 0; y < masked.size(); ++y) {
      if (banned(static_cast<specd_token>(y), committed, path))
        masked[y] = -std::numeric_limits<float>::infinity();
      any = any || std::isfinite(masked[y]);
    }
    if (any) logits = std::move(masked);
  }
  std::vector<double> out(logits.size());
  transform_logits(std::span<const float>(logits), sampling_, out);
  return out;
}

std::vector<bool> PathRows::draft_allowed(const std::vector<specd_token>& committed,
                                          std::span<const specd_token> path) const {
  std::vector<bool> allowed(model_.vocab, true);
  if (!constraint_.mask_draft) return allowed;
  const specd_token last = path.empty() ? committed.back() : path.back();
  const std::vector<double>& probs = model_.target[static_cast<size_t>(last)];
  bool any = false;
  for (uint32_t y = 0; y < model_.vocab; ++y) {
    allowed[y] = !banned(static_cast<specd_token>(y), committed, path);
    any = any || (allowed[y] && probs[y] > 0);
  }
  if (!any) allowed.assign(model_.vocab, true);
  return allowed;
}

RowFn PathRows::target(const std::vector<specd_token>& committed) const {
  if (!constraint_.path_dependent())
    return [this, root = committed.back()](std::span<const specd_token> ctx) {
      return plain_p_[static_cast<size_t>(ctx.empty() ? root : ctx.back())];
    };
  std::shared_ptr<Penalties> penalties;
  if (constraint_.penalties.active()) {
    penalties = std::make_shared<Penalties>(constraint_.penalties, model_.vocab);
    penalties->add_context(committed.front());  // the prompt
    for (size_t i = 1; i < committed.size(); ++i) penalties->add(committed[i]);
  }
  return [this, committed, penalties](std::span<const specd_token> ctx) {
    return row(model_.target, constraint_.mask_target, penalties.get(), committed, ctx);
  };
}

RowFn PathRows::draft(const std::vector<specd_token>& committed) const {
  if (!constraint_.mask_draft)
    return [this, root = committed.back()](std::span<const specd_token> ctx) {
      return plain_q_[static_cast<size_t>(ctx.empty() ? root : ctx.back())];
    };
  return [this, committed](std::span<const specd_token> ctx) {
    return row(model_.draft, true, nullptr, committed, ctx);
  };
}

}  // namespace specd
