// The verifier side of a round, as the engine sees it: process the prompt, score the root
// and a draft tree in one pass, keep the accepted path. One C++ interface inside the
// process: the built-in verifiers implement it directly (the target model, TargetVerifier;
// a batched sequence's, BatchVerifier), and a plugin's specd_verifier_vtable (verifier.h)
// is reached through one adapter (make_plugin_verifier, verifier_factory.hpp), the only
// place the C ABI is crossed.
//
// Who owns what: `logits` and `hidden` are the caller's buffers, written by the verifier and
// never kept past the rows' scoring. For every verifier but BatchVerifier that is before
// verify() returns; a BatchVerifier only records the rows, and the scheduler's next
// LlamaModel::forward_batch writes the logits into the buffer given to verify() (a
// Sequence's own), so the caller keeps it alive and untouched until that pass is done.
//
// Thread rule: one thread at a time per verifier (the engine's, or the scheduler's worker).
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
  virtual ~Verifier() = default;
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;

  uint32_t vocab_size() const { return info_.vocab_size; }
  uint32_t hidden_dim() const { return info_.hidden_dim; }  // 0 = no features offered
  uint32_t context_length() const { return info_.context_length; }
  uint64_t vocab_digest() const { return info_.vocab_digest; }  // 0 = not known
  const std::string& what() const { return what_; }

  // Starts a sequence: processes prompt[0..n-1) and writes their features to `hidden`
  // ([n-1, hidden_dim]) when not null. The last prompt token becomes the first root.
  // Throws UsageError for an empty prompt or one longer than the context.
  void begin(std::span<const specd_token> prompt, float* hidden);
  // Scores the root and the tree's nodes: logits [(N+1), vocab], hidden [(N+1), hidden_dim]
  // (see above for when they are written).
  void verify(specd_token root, const specd_draft_tree& tree, float* logits, float* hidden);
  // Keeps the root and the accepted nodes (ids of the last tree, root-to-leaf).
  void commit(std::span<const int32_t> path);
  // Tokens held (committed) so far.
  uint32_t committed() const { return committed_; }
  // Seconds of the last verify spent outside computing (a network round trip); 0 = local.
  double last_overhead_s() const { return last_overhead_s_; }

 protected:
  // `what` names the verifier in errors ("verifier 'remote'").
  explicit Verifier(std::string what) : what_(std::move(what)) {}
  // Sets what the verifier offers; throws Error for a vocabulary of 0 tokens or a context
  // under 2. Called once, by the constructor of the implementation.
  void set_info(const specd_verifier_info& info);
  // The same for the host's own target `model` with a context of `context_length` rows: its
  // vocabulary and feature width, no vocabulary digest (nothing to compare).
  void set_info(const LlamaModel& model, uint32_t context_length);

  virtual void do_begin(std::span<const specd_token> prompt, float* hidden) = 0;
  virtual void do_verify(specd_token root, const specd_draft_tree& tree, float* logits,
                         float* hidden) = 0;
  virtual void do_commit(std::span<const int32_t> path) = 0;

  double last_overhead_s_ = 0;  // set by do_verify when time went outside computing

 private:
  std::string what_;
  specd_verifier_info info_{};
  uint32_t committed_ = 0;
};

// A plugin's verifier object behind its vtable. Takes ownership of `object` (released with
// vtable->destroy, also when this throws). Status objects become exceptions naming the
// verifier and the step; the info is read through struct_size.
std::unique_ptr<Verifier> make_plugin_verifier(const specd_verifier_vtable* vtable, void* object,
                                               std::string what);

// The built-in verifier: the target model on its device. `context` caps the KV cache (0 =
// the model's length).
std::unique_ptr<Verifier> make_target_verifier(LlamaModel& model, uint32_t context);

}  // namespace specd
