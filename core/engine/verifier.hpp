// The verifier side of a round, as the engine sees it: process the prompt, score the root
// and a draft tree in one pass, keep the accepted path. The standard implementation runs
// the target model on a backend (make_target_verifier).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "specd/draft.h"

namespace specd {

class LlamaModel;

class Verifier {
 public:
  virtual ~Verifier() = default;
  virtual uint32_t vocab_size() const = 0;
  virtual uint32_t hidden_dim() const = 0;      // 0 = no features offered
  virtual uint32_t context_length() const = 0;  // most tokens a sequence may hold

  // Starts a sequence: processes prompt[0..n-1) and writes their features to `hidden`
  // ([n-1, hidden_dim]) when not null. The last prompt token becomes the first root.
  virtual void begin(std::span<const specd_token> prompt, float* hidden) = 0;
  // Scores the root and the tree's nodes: logits [(N+1), vocab], hidden [(N+1), hidden_dim].
  virtual void verify(specd_token root, const specd_draft_tree& tree, float* logits,
                      float* hidden) = 0;
  // Keeps the root and the accepted nodes (ids of the last tree, root-to-leaf).
  virtual void commit(std::span<const int32_t> path) = 0;
  // Tokens held (committed) so far.
  virtual uint32_t committed() const = 0;
};

// The target model on its device. `context` caps the KV cache (0 = the model's length).
std::unique_ptr<Verifier> make_target_verifier(LlamaModel& model, uint32_t context);

}  // namespace specd
