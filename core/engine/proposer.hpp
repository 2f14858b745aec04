// The proposer side of a round, as the engine sees it: one Proposer per drafting strategy,
// serving any number of sequences (ProposerSequence), and one propose() call that drafts for
// several of them at once. `specd run` drives it with one sequence, the server's scheduler
// with every drafting sequence of a step: one path.
//
// A batched plugin (SPECD_PROPOSER_BATCHED, ABI 0.5) is one plugin object with a handle per
// sequence, and a propose() is one propose_batch call. A per-sequence plugin (any minor) goes
// through an adapter: one plugin object per sequence (made with the same parameters, reused
// after its sequence ends), propose called for each sequence in turn.
//
// Thread rule: a Proposer and its sequences are used by one thread at a time.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/model_service.hpp"
#include "engine/plugin_params.hpp"
#include "engine/text_service.hpp"
#include "plugin/host_services.hpp"
#include "plugin/registry.hpp"
#include "sampling/sampling_transform.hpp"
#include "specd/proposer.h"

namespace specd {

class Device;
class Tokenizer;

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
  // What the models it opens (host->models) load onto: the context of the host table its
  // plugin objects receive, shared with the caller (check-config reads refused_open). Null,
  // or a run without a registry: models are refused and no further sequence objects open.
  std::shared_ptr<ModelRun> models;
  // The target's tokenizer, behind the text service (specd_proposer_context.text); must
  // outlive the Proposer. Null: the proposer gets no text service.
  const Tokenizer* tokenizer = nullptr;
};

class Proposer;

// One sequence's drafting state in a Proposer.
class ProposerSequence {
 public:
  ~ProposerSequence();
  ProposerSequence(const ProposerSequence&) = delete;
  ProposerSequence& operator=(const ProposerSequence&) = delete;

  // Starts the sequence (again): its prompt and, when the proposer asked, the target's
  // features of all but the prompt's last token.
  void begin(std::span<const specd_token> prompt, const float* hidden);
  void commit(std::span<const specd_token> accepted, specd_token next, const float* hidden);

 private:
  friend class Proposer;
  ProposerSequence(Proposer& owner, void* handle) : owner_(&owner), handle_(handle) {}
  Proposer* owner_;
  void* handle_;  // the batched plugin's sequence handle, or a per-sequence plugin's object
};

// One sequence's part of a propose() call.
struct ProposeCall {
  ProposerSequence* sequence = nullptr;
  std::span<const specd_token> tokens;  // the whole accepted sequence, root last
  uint32_t capacity = 0;                // at most this many nodes (and the proposer's max)
  Rng* rng = nullptr;
  Draft* draft = nullptr;
  const specd_token_filter* filter = nullptr;  // the sequence's output constraint, if any
  std::string error;  // set when this sequence alone failed: the others' drafts stand
};

class Proposer {
 public:
  // Loads `plugin` (a proposer) with the [proposer] section of `config`: the batched object,
  // or a per-sequence plugin's first object.
  Proposer(const LoadedPlugin& plugin, const ProposerConfig& config, const ProposerSetup& setup);
  ~Proposer();
  Proposer(const Proposer&) = delete;
  Proposer& operator=(const Proposer&) = delete;

  const std::string& id() const { return plugin_->id; }
  const std::string& name() const { return plugin_->name; }
  uint64_t flags() const { return vtable_->flags; }
  bool needs_hidden() const { return flags() & SPECD_PROPOSER_NEEDS_TARGET_HIDDEN; }
  bool batched() const { return batched_; }
  std::string default_rule() const { return vtable_->default_rule ? vtable_->default_rule : ""; }

  // The state of one more sequence (released with it).
  std::unique_ptr<ProposerSequence> open();
  // Drafts for every call's sequence (each at most once) into its draft. A failure of the
  // whole call throws; a failure of one sequence sets its call's error.
  void propose(std::span<ProposeCall> calls);

 private:
  friend class ProposerSequence;
  static specd_status* apply_transform(void* context, const float* logits, uint32_t n, double* out);
  void* create_object() const;
  void close(void* handle);
  void prepare(ProposeCall& call, specd_draft_output& out) const;
  void finish(ProposeCall& call, const specd_draft_output& out) const;

  const LoadedPlugin* plugin_;
  const specd_proposer_vtable* vtable_;
  bool batched_ = false;
  ProposerConfig config_;
  ProposerSetup setup_;
  specd_host host_;  // the process's host table with the model service for setup_.models
  PluginParams params_;
  std::vector<const char*> texts_;  // setup_.token_texts as C strings
  specd_proposer_context context_{};
  void* object_ = nullptr;           // the batched plugin's object
  std::vector<void*> idle_objects_;  // per-sequence plugin objects not in use
  SamplingParams sampling_;
  uint32_t vocab_ = 0;
  uint32_t n_tokens_ = 0;      // ids from it on are padding, masked in apply_transform
  std::vector<float> masked_;  // apply_transform's copy of logits with padding masked
  std::unique_ptr<TokenizerTextService> text_;  // context_.text when the setup has a tokenizer
  uint32_t max_nodes_ = 0;
  specd_transform transform_{};
  // How errors name this proposer: "proposer 'draft-model' (model /path/draft.gguf)", so a
  // failure caused by a file (NaN weights, a head that does not fit) names the file.
  std::string what_;
};

}  // namespace specd
