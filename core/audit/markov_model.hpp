// The Markov toy model of `specd audit`: a target and a draft that are both first-order
// Markov chains over a small vocabulary, so every distribution the audit needs is exact.
//
// File format (TOML):
//   vocab   = 4
//   initial = [0.25, 0.25, 0.25, 0.25]          # the prompt's last token (the first root)
//   target  = [[...V probs...], ... V rows ...]   # row a: target p(next | previous = a)
//   draft   = [[...], ...]                        # row a: draft q(next | previous = a)
//   name    = "optional label for tables"
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
  std::vector<std::vector<double>> draft;   // [vocab][vocab]
};

// Reads a Markov table file. Throws UsageError "file:line:col: message" for syntax errors
// and for values of the wrong shape or that are not distributions.
MarkovModel load_markov_model(const std::string& path);

// Checks shapes and rows; throws UsageError prefixed with `where`.
void validate_markov_model(const MarkovModel& model, const std::string& where);

// The built-in tables: edge cases for acceptance rules (q(x) = 0 where p(x) > 0,
// p(x) = 0 where q(x) > 0, p = q, one-hot p, one-hot q, near-uniform, peaked).
std::vector<MarkovModel> builtin_markov_models();

}  // namespace specd
