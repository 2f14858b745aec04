// The proposer side of a round, as the engine sees it, and the adapter that runs a
// proposer plugin (specd_proposer_vtable) behind it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "plugin/host_services.hpp"
#include "plugin/registry.hpp"
#include "sampling/sampling_transform.hpp"
#include "specd/proposer.h"

namespace specd {

// A draft held by the engine: the storage behind a specd_draft_tree.
struct Draft {
  std::vector<specd_token> tokens;
  std::vector<int32_t> parents;
  std::vector<double> q;  // (capacity + 1) * vocab when the proposer gives q
  uint32_t n_nodes = 0;
  specd_sibling_scheme scheme = SPECD_SIBLINGS_DETERMINISTIC;
  bool has_q = false;
  uint32_t vocab = 0;

  specd_draft_tree tree() const {
    return {sizeof(specd_draft_tree),  n_nodes, vocab, scheme, tokens.data(), parents.data(),
            has_q ? q.data() : nullptr};
  }
};

struct ProposerSetup {
  uint32_t vocab_size = 0;
  uint32_t n_tokens = 0;  // the tokenizer's size; ids from it to vocab_size are padding
                          // (0 = no padding)
  uint32_t hidden_dim = 0;
  uint32_t max_nodes = 0;
  std::string target_path;
  std::vector<std::string> token_texts;
  SamplingParams sampling;
};

class Proposer {
 public:
  // Loads `plugin` (a proposer) with the [proposer] section of `config`.
  Proposer(const LoadedPlugin& plugin, const ProposerConfig& config, const ProposerSetup& setup);
  ~Proposer();
  Proposer(const Proposer&) = delete;
  Proposer& operator=(const Proposer&) = delete;

  const std::string& id() const { return plugin_->id; }
  const std::string& name() const { return plugin_->name; }
  uint64_t flags() const { return vtable_->flags; }
  bool needs_hidden() const { return flags() & SPECD_PROPOSER_NEEDS_TARGET_HIDDEN; }
  std::string default_rule() const { return vtable_->default_rule ? vtable_->default_rule : ""; }

  void begin(std::span<const specd_token> prompt, const float* hidden);
  // Drafts at most `capacity` nodes into `draft`.
  void propose(std::span<const specd_token> sequence, uint32_t capacity, Rng& rng, Draft& draft);
  void commit(std::span<const specd_token> accepted, specd_token next, const float* hidden);

 private:
  static specd_status* apply_transform(void* context, const float* logits, uint32_t n, double* out);
  const LoadedPlugin* plugin_;
  const specd_proposer_vtable* vtable_;
  void* object_ = nullptr;
  SamplingParams sampling_;
  uint32_t vocab_ = 0;
  uint32_t n_tokens_ = 0;      // ids from it on are padding, masked in apply_transform
  std::vector<float> masked_;  // apply_transform's copy of logits with padding masked
  uint32_t max_nodes_ = 0;
  specd_transform transform_{};
  // How errors name this proposer: "proposer 'draft-model' (model /path/draft.gguf)", so a
  // failure caused by a file (NaN weights, a head that does not fit) names the file.
  std::string what_;
};

}  // namespace specd
