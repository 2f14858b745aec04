// One drafted token of a chain from its row of logits, as the draft-model and MTP proposers
// form it: q over the target's vocabulary, then a draw or the argmax.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <specd/cpp/distribution.hpp>
#include <specd/cpp/host.hpp>
#include <specd/cpp/plugin.hpp>

namespace specd::strategies {

// Token i of item's chain. q_row (item.out.q's row i, or scratch when the run wants no q) is
// transform over the first n logits (the ids both vocabularies have) and 0 beyond, up to the
// target's vocab; greedy takes its argmax and leaves q as that point mass, else a draw with
// the item's rng. Writes the token as node i of the chain. A failing transform throws its
// status (sdk::PluginError).
template <class Item>
specd_token draft_chain_token(Item& item, uint32_t i, const float* logits, uint32_t n,
                              uint32_t vocab, bool greedy, const specd_transform& transform,
                              const specd_host& host) {
  std::vector<double> scratch;
  double* q_row = item.out.q ? item.out.q + static_cast<size_t>(i) * vocab
                             : (scratch.resize(vocab), scratch.data());
  specd::sdk::Host(&host).check(transform.apply(transform.context, logits, n, q_row));
  std::fill(q_row + n, q_row + vocab, 0.0);
  const specd_token token =
      greedy ? specd::sdk::argmax_index(q_row, vocab)
             : specd::sdk::sample_index(q_row, vocab, host.rng_uniform(host.context, item.rng));
  if (greedy) {  // the point mass the token was taken from
    std::fill(q_row, q_row + vocab, 0.0);
    q_row[token] = 1.0;
  }
  item.out.tokens[i] = token;
  item.out.parents[i] = static_cast<int32_t>(i);
  item.out.n_nodes = i + 1;
  return token;
}

}  // namespace specd::strategies
