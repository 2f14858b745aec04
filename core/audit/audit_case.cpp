#include "audit/audit_case.hpp"

#include <map>

#include "acceptance/cut_emitted.hpp"
#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"
#include "sampling/sample_row.hpp"

namespace specd {
namespace {

using Seq = std::vector<specd_token>;

size_t index_of(const Seq& s, uint32_t vocab) {
  size_t i = 0;
  for (specd_token t : s) i = i * vocab + static_cast<size_t>(t);
  return i;
}

// Emitted-token distribution of one round after `committed`: every draft times outcomes.
std::map<Seq, double> round_distribution(const AcceptanceRule& rule, const CaseSetup& setup,
                                         const DraftSpec& spec, const PathRows& rows,
                                         const Seq& committed) {
  std::map<Seq, double> out;
  const auto visit = [&](const OwnedDraft& d, double w) {
    const specd_draft_tree tree = d.tree();
    const specd_target_dists target = d.target();
    validate_tree(tree, spec.vocab, "audit draft");
    for (const AcceptOutcome& o : rule.outcomes(tree, target)) {
      Seq e;
      for (int32_t node : o.path) e.push_back(d.tokens[node - 1]);
      e.push_back(o.next_token);
      out[e] += w * o.probability;
    }
  };
  if (setup.model->two_vocabularies())
    enumerate_translated_drafts(
        *setup.model, setup.translation, setup.sampling.temperature,
        static_cast<uint32_t>(spec.branching.size()), committed, rows.target(committed),
        [&](std::span<const specd_token> path) { return rows.draft_allowed(committed, path); },
        visit);
  else
    enumerate_drafts(spec, rows.draft(committed), rows.target(committed), visit);
  return out;
}

}  // namespace

size_t sequence_space(uint32_t vocab, uint32_t tokens, size_t limit) {
  size_t n = 1;
  for (uint32_t i = 0; i <= tokens; ++i) {
    n *= vocab;
    if (n > limit)
      throw UsageError("the audit enumerates every sequence of " + std::to_string(tokens + 1) +
                       " tokens over a vocabulary of " + std::to_string(vocab) +
                       ": too many (limit " + std::to_string(limit) +
                       "); use fewer --tokens or a smaller table");
  }
  return n;
}

std::vector<double> target_distribution(const CaseSetup& setup) {
  const MarkovModel& m = *setup.model;
  const uint32_t V = m.vocab;
  const size_t length = setup.tokens + 1;  // t0 .. tn
  const size_t space = sequence_space(V, setup.tokens, 1u << 22);
  const PathRows rows(m, setup.sampling, setup.constraint);
  // Chain rule over (t0..tn).
  std::vector<double> target(space, 0.0);
  std::map<Seq, double> frontier;
  for (uint32_t t = 0; t < V; ++t)
    if (m.initial[t] > 0) frontier[{static_cast<specd_token>(t)}] = m.initial[t];
  while (!frontier.empty() && frontier.begin()->first.size() < length) {
    std::map<Seq, double> next;
    for (const auto& [s, pr] : frontier) {
      const std::vector<double> p = rows.target(s)({});
      for (uint32_t y = 0; y < V; ++y)
        if (p[y] > 0) {
          Seq e = s;
          e.push_back(static_cast<specd_token>(y));
          next[e] += pr * p[y];
        }
    }
    frontier = std::move(next);
  }
  for (const auto& [s, pr] : frontier) target[index_of(s, V)] += pr;
  return target;
}

CaseNumbers measure_case(const AcceptanceRule& rule, const CaseSetup& setup, uint64_t samples,
                         Rng& rng) {
  const MarkovModel& m = *setup.model;
  const uint32_t V = m.vocab;
  const size_t length = setup.tokens + 1;  // t0 .. tn
  const size_t space = sequence_space(V, setup.tokens, 1u << 22);
  DraftSpec spec = setup.spec;
  spec.vocab = V;
  const PathRows rows(m, setup.sampling, setup.constraint);

  CaseNumbers out;
  out.target = target_distribution(setup);

  // Exact speculative distribution: rounds chained by a dynamic program over prefixes.
  out.has_exact = rule.has_outcomes();
  if (out.has_exact) {
    std::map<Seq, std::map<Seq, double>> rounds;  // by PathRows::key of the committed tokens
    out.exact.assign(space, 0.0);
    std::map<Seq, double> open;
    for (uint32_t t = 0; t < V; ++t)
      if (m.initial[t] > 0) open[{static_cast<specd_token>(t)}] = m.initial[t];
    while (!open.empty()) {
      std::map<Seq, double> next;
      for (const auto& [s, pr] : open) {
        // A two-vocabulary draft reads the whole text (its tokens may span target tokens).
        const Seq key = m.two_vocabularies() ? s : rows.key(s);
        auto round = rounds.find(key);
        if (round == rounds.end())
          round = rounds.emplace(key, round_distribution(rule, setup, spec, rows, s)).first;
        for (const auto& [e, pe] : round->second) {
          Seq ext = s;
          const size_t keep = cut_emitted(e, {}, length - s.size());
          ext.insert(ext.end(), e.begin(), e.begin() + static_cast<std::ptrdiff_t>(keep));
          if (ext.size() == length)
            out.exact[index_of(ext, V)] += pr * pe;
          else
            next[ext] += pr * pe;
        }
      }
      open = std::move(next);
    }
  }

  // Monte-Carlo with the rule's sampler.
  out.counts.assign(space, 0);
  for (uint64_t i = 0; i < samples; ++i) {
    Seq s{static_cast<specd_token>(sample(m.initial, rng))};
    while (s.size() < length) {
      const OwnedDraft d =
          m.two_vocabularies()
              ? sample_translated_draft(
                    m, setup.translation, setup.sampling.temperature,
                    static_cast<uint32_t>(spec.branching.size()), s, rows.target(s),
                    [&](std::span<const specd_token> path) { return rows.draft_allowed(s, path); },
                    rng)
              : sample_draft(spec, rows.draft(s), rows.target(s), rng);
      const AcceptResult r = rule.accept(d.tree(), d.target(), rng);
      Seq e;
      for (int32_t node : r.path) e.push_back(d.tokens[node - 1]);
      e.push_back(r.next_token);
      const size_t keep = cut_emitted(e, {}, length - s.size());
      s.insert(s.end(), e.begin(), e.begin() + static_cast<std::ptrdiff_t>(keep));
    }
    ++out.counts[index_of(s, V)];
  }
  return out;
}

}  // namespace specd
