#include "audit/translated_drafts.hpp"

#include <cmath>
#include <limits>

#include "common/error.hpp"
#include "sampling/sample_row.hpp"
#include "specd/cpp/distribution.hpp"
#include "specd/cpp/vocabulary_bridge.hpp"

namespace specd {
namespace {

using Seq = std::vector<specd_token>;

// The draft's distribution after draft token `state`, as the proposer computes it.
std::vector<double> draft_row(const MarkovModel& m, Translation translation, double temperature,
                              const std::vector<specd_token>& map, specd_token state,
                              const std::vector<bool>* allowed = nullptr) {
  const std::vector<double>& probs = m.draft[static_cast<size_t>(state)];
  std::vector<float> logits(probs.size());
  for (size_t d = 0; d < probs.size(); ++d)
    logits[d] = probs[d] > 0 ? static_cast<float>(std::log(probs[d]))
                             : -std::numeric_limits<float>::infinity();
  if (translation == Translation::kIntersection) {
    sdk::mask_outside_intersection(logits, map);
    for (size_t d = 0; allowed && d < logits.size(); ++d)
      if (map[d] >= 0 && !(*allowed)[static_cast<size_t>(map[d])])
        logits[d] = -std::numeric_limits<float>::infinity();
  }
  std::vector<double> q(probs.size());
  if (!sdk::softmax_at(logits, temperature, q)) q.clear();
  return q;
}

// The draft's last token for the committed text.
specd_token draft_state(const MarkovModel& m, const Seq& committed) {
  std::string text;
  for (specd_token t : committed) text += m.target_text[static_cast<size_t>(t)];
  sdk::DraftTokens tokens(
      [&](std::string_view s, bool) { return longest_match_tokens(s, m.draft_text); },
      m.draft_text);
  return tokens.update(text).back();
}

// A draft over the target's vocabulary from its tokens and each node's q row.
OwnedDraft make_draft(uint32_t vocab, const Seq& tokens, const std::vector<std::vector<double>>& q,
                      const RowFn& p_row) {
  OwnedDraft d;
  d.vocab = vocab;
  d.scheme = SPECD_SIBLINGS_IID;
  d.with_q = true;
  d.tokens = tokens;
  const size_t n = tokens.size();
  d.q.assign((n + 1) * vocab, 0.0);
  d.p.assign((n + 1) * vocab, 0.0);
  for (size_t i = 0; i <= n; ++i) {
    if (i < n) {
      d.parents.push_back(static_cast<int32_t>(i));
      std::copy(q[i].begin(), q[i].end(), d.q.begin() + static_cast<std::ptrdiff_t>(i * vocab));
    }
    const std::vector<double> p = p_row(std::span<const specd_token>(tokens.data(), i));
    std::copy(p.begin(), p.end(), d.p.begin() + static_cast<std::ptrdiff_t>(i * vocab));
  }
  return d;
}

std::vector<double> one_hot(uint32_t vocab, specd_token t) {
  std::vector<double> q(vocab, 0.0);
  q[static_cast<size_t>(t)] = 1.0;
  return q;
}

// The text translation's one draft: k argmax steps, re-tokenized for the target.
OwnedDraft text_draft(const MarkovModel& m, double temperature, uint32_t k, const Seq& committed,
                      const RowFn& p_row, const AllowedFn& allowed) {
  specd_token state = draft_state(m, committed);
  std::string bytes;
  for (uint32_t i = 0; i < k; ++i) {
    const std::vector<double> q = draft_row(m, Translation::kText, temperature, {}, state);
    if (q.empty()) break;
    state = sdk::argmax_index(q.data(), static_cast<uint32_t>(q.size()));
    bytes += m.draft_text[static_cast<size_t>(state)];
  }
  Seq tokens = longest_match_tokens(bytes, m.target_text);
  if (tokens.size() > k) tokens.resize(k);
  for (size_t i = 0; i < tokens.size(); ++i)  // cut before the first refused token
    if (!allowed(std::span<const specd_token>(tokens.data(), i))[static_cast<size_t>(tokens[i])]) {
      tokens.resize(i);
      break;
    }
  std::vector<std::vector<double>> q;
  for (specd_token t : tokens) q.push_back(one_hot(m.vocab, t));
  return make_draft(m.vocab, tokens, q, p_row);
}

}  // namespace

const char* translation_name(Translation t) {
  return t == Translation::kText ? "across vocabularies (text)"
                                 : "across vocabularies (intersection)";
}

std::vector<specd_token> longest_match_tokens(std::string_view text,
                                              const std::vector<std::string>& vocabulary) {
  std::vector<specd_token> out;
  for (size_t at = 0; at < text.size();) {
    size_t best = vocabulary.size(), length = 0;
    for (size_t t = 0; t < vocabulary.size(); ++t)
      if (vocabulary[t].size() > length && text.substr(at).starts_with(vocabulary[t])) {
        best = t;
        length = vocabulary[t].size();
      }
    if (best == vocabulary.size())
      throw UsageError("no token of the table spells '" + std::string(text.substr(at, 1)) + "'");
    out.push_back(static_cast<specd_token>(best));
    at += length;
  }
  return out;
}

void enumerate_translated_drafts(const MarkovModel& m, Translation translation, double temperature,
                                 uint32_t k, const Seq& committed, const RowFn& p_row,
                                 const AllowedFn& allowed,
                                 const std::function<void(const OwnedDraft&, double)>& visit) {
  if (translation == Translation::kText) {
    visit(text_draft(m, temperature, k, committed, p_row, allowed), 1.0);
    return;
  }
  const std::vector<specd_token> map = sdk::intersect_vocabularies(m.draft_text, m.target_text);
  Seq tokens;
  std::vector<std::vector<double>> q_rows;
  std::function<void(specd_token, double)> grow = [&](specd_token state, double weight) {
    const std::vector<bool> ok = allowed(tokens);
    const std::vector<double> q = tokens.size() < k
                                      ? draft_row(m, translation, temperature, map, state, &ok)
                                      : std::vector<double>();
    if (q.empty()) {
      visit(make_draft(m.vocab, tokens, q_rows, p_row), weight);
      return;
    }
    std::vector<double> q_target(m.vocab);
    sdk::map_to_target(q, map, q_target);
    for (size_t d = 0; d < q.size(); ++d) {
      if (!(q[d] > 0)) continue;
      tokens.push_back(map[d]);
      q_rows.push_back(q_target);
      grow(static_cast<specd_token>(d), weight * q[d]);
      tokens.pop_back();
      q_rows.pop_back();
    }
  };
  grow(draft_state(m, committed), 1.0);
}

OwnedDraft sample_translated_draft(const MarkovModel& m, Translation translation,
                                   double temperature, uint32_t k, const Seq& committed,
                                   const RowFn& p_row, const AllowedFn& allowed, Rng& rng) {
  if (translation == Translation::kText)
    return text_draft(m, temperature, k, committed, p_row, allowed);
  const std::vector<specd_token> map = sdk::intersect_vocabularies(m.draft_text, m.target_text);
  Seq tokens;
  std::vector<std::vector<double>> q_rows;
  specd_token state = draft_state(m, committed);
  while (tokens.size() < k) {
    const std::vector<bool> ok = allowed(tokens);
    const std::vector<double> q = draft_row(m, translation, temperature, map, state, &ok);
    if (q.empty()) break;
    state = static_cast<specd_token>(sample(q, rng));
    std::vector<double> q_target(m.vocab);
    sdk::map_to_target(q, map, q_target);
    tokens.push_back(map[static_cast<size_t>(state)]);
    q_rows.push_back(std::move(q_target));
  }
  return make_draft(m.vocab, tokens, q_rows, p_row);
}

}  // namespace specd
