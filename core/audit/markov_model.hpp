// The Markov toy model of `specd audit`: a target and a draft that are both first-order
// Markov chains over a small vocabulary, so every distribution the audit needs is exact.
//
// File format (TOML):
//   vocab   = 4
//   initial = [0.25, 0.25, 0.25, 0.25]          # the prompt's last token (the first root)
//   target  = [[...V probs...], ... V rows ...]   # row a: target p(next | previous = a)
//   draft   = [[...], ...]                        # row a: draft q(next | previous = a)
//   name    = "optional label for tables"
// A two-vocabulary table (a draft with a tokenizer of its own) adds
//   target_text = ["a", "b", "ab", ...]           # the text of each target token
//   draft_text  = ["a", "b", "ba", ...]           # the text of each draft token
// and then `draft` is a chain over the draft's tokens (len(draft_text) rows of as many
// entries). Every byte of either vocabulary's texts must be a token of both.
// Rows are probabilities (not logits); each must sum to 1 within 1e-6.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace specd {

struct MarkovModel {
  std::string name;
  std::string description;
  uint32_t vocab = 0;
  std::vector<double> initial;              // [vocab]
  std::vector<std::vector<double>> target;  // [vocab][vocab]
  std::vector<std::vector<double>> draft;   // [vocab][vocab], or [draft vocab]^2 (below)
  // Two-vocabulary tables: each token's text, for the target and for the draft (whose own
  // chain `draft` is then). Empty otherwise.
  std::vector<std::string> target_text, draft_text;
  bool two_vocabularies() const { return !draft_text.empty(); }
  uint32_t draft_vocab() const {
    return two_vocabularies() ? static_cast<uint32_t>(draft_text.size()) : vocab;
  }
};

// Reads a Markov table file. Throws UsageError "file:line:col: message" for syntax errors
// and for values of the wrong shape or that are not distributions.
MarkovModel load_markov_model(const std::string& path);

// Checks shapes and rows; throws UsageError prefixed with `where`.
void validate_markov_model(const MarkovModel& model, const std::string& where);

// The built-in tables: edge cases for acceptance rules (q(x) = 0 where p(x) > 0,
// p(x) = 0 where q(x) > 0, p = q, one-hot p, one-hot q, near-uniform, peaked), and a draft
// with a vocabulary of its own (tokens the target lacks, a target token it lacks, two draft
// tokens spelling one target token).
std::vector<MarkovModel> builtin_markov_models();

}  // namespace specd
