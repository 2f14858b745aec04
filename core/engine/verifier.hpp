// The verifier side of a round, as the engine sees it: process the prompt, score the root
// and a draft tree in one pass, keep the accepted path. The engine talks to every verifier
// through this one host adapter over the ABI's specd_verifier_vtable (verifier.h): the
// built-in target verifier (make_target_verifier) and plugins (make_verifier,
// verifier_factory.hpp) alike.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "specd/draft.h"
#include "specd/verifier.h"

namespace specd {

class LlamaModel;

class Verifier {
 public:
  // Takes ownership of `object` (released with vtable->destroy). `what` names the verifier
  // in errors ("verifier 'remote'"). Reads the verifier's info once.
  Verifier(const specd_verifier_vtable* vtable, void* object, std::string what);
  ~Verifier();
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;

  uint32_t vocab_size() const { return info_.vocab_size; }
  uint32_t hidden_dim() const { return info_.hidden_dim; }  // 0 = no features offered
  uint32_t context_length() const { return info_.context_length; }
  uint64_t vocab_digest() const { return info_.vocab_digest; }  // 0 = not known
  const std::string& what() const { return what_; }

  // Starts a sequence: processes prompt[0..n-1) and writes their features to `hidden`
  // ([n-1, hidden_dim]) when not null. The last prompt token becomes the first root.
  void begin(std::span<const specd_token> prompt, float* hidden);
  // Scores the root and the tree's nodes: logits [(N+1), vocab], hidden [(N+1), hidden_dim].
  void verify(specd_token root, const specd_draft_tree& tree, float* logits, float* hidden);
  // Keeps the root and the accepted nodes (ids of the last tree, root-to-leaf).
  void commit(std::span<const int32_t> path);
  // Tokens held (committed) so far.
  uint32_t committed() const { return committed_; }
  // Seconds of the last verify spent outside computing (a network round trip); 0 = local.
  double last_overhead_s() const { return last_overhead_s_; }

 private:
  const specd_verifier_vtable* vtable_;
  void* object_;
  std::string what_;
  specd_verifier_info info_{};
  uint32_t committed_ = 0;
  double last_overhead_s_ = 0;
};

// The built-in verifier: the target model on its device, behind the same vtable as a
// plugin. `context` caps the KV cache (0 = the model's length).
std::unique_ptr<Verifier> make_target_verifier(LlamaModel& model, uint32_t context);

}  // namespace specd
