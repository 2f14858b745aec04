// Drafts of a two-vocabulary table (MarkovModel::two_vocabularies): the draft is a chain over
// its own tokens, and its drafts reach the target's vocabulary as the draft-model proposer's
// do with `vocabulary = "text"` or `"intersection"`, through the same code
// (specd/cpp/vocabulary_bridge.hpp):
//   - the draft's state is the last of its tokens for the committed text (DraftTokens over
//     the tokenizer below), its rows its table's rows at the case's temperature (softmax_at);
//   - text: k argmax steps, their bytes tokenized by the target's tokenizer, proposed as a
//     chain with one-hot q (one draft, probability 1);
//   - intersection: k steps drawn among the draft tokens that spell one target token
//     (mask_outside_intersection), each mapped to it with q carried (map_to_target).
// The tables' tokenizers split text greedily into the longest token that matches (the first
// of equal ones).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audit/draft_enumeration.hpp"
#include "audit/markov_model.hpp"

namespace specd {

enum class Translation { kText, kIntersection };

const char* translation_name(Translation t);

// `text` as tokens of `vocabulary` (longest match first). Throws UsageError when a byte has
// no token.
std::vector<specd_token> longest_match_tokens(std::string_view text,
                                              const std::vector<std::string>& vocabulary);

// The target tokens a constraint allows after a draft path (target tokens below the root),
// as the host's token filter tells the proposer (PathRows::draft_allowed).
using AllowedFn = std::function<std::vector<bool>(std::span<const specd_token> path)>;

// Every draft of the round after `committed` (t0 first) with its probability; p_row gives
// the target's rows as in enumerate_drafts. Under a constraint, an intersection draw is
// masked by `allowed` (mapped onto the draft's ids) and a text chain is cut before its first
// refused token, as the proposer does.
void enumerate_translated_drafts(const MarkovModel& model, Translation translation,
                                 double temperature, uint32_t k,
                                 const std::vector<specd_token>& committed, const RowFn& p_row,
                                 const AllowedFn& allowed,
                                 const std::function<void(const OwnedDraft&, double)>& visit);

// One draft of that round, drawn with `rng`.
OwnedDraft sample_translated_draft(const MarkovModel& model, Translation translation,
                                   double temperature, uint32_t k,
                                   const std::vector<specd_token>& committed, const RowFn& p_row,
                                   const AllowedFn& allowed, Rng& rng);

}  // namespace specd
