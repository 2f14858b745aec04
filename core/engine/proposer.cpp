#include "engine/proposer.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "engine/padding_mask.hpp"
#include "engine/plugin_params.hpp"

namespace specd {

specd_status* Proposer::apply_transform(void* context, const float* logits, uint32_t n,
                                        double* out) {
  auto* self = static_cast<Proposer*>(context);
  try {
    if (n > self->vocab_) throw Error("more logits than the vocabulary holds");
    if (self->n_tokens_ != 0 && n > self->n_tokens_) {
      // A draft's padding ids are as impossible as the target's.
      self->masked_.assign(logits, logits + n);
      mask_padding(self->masked_, self->n_tokens_);
      logits = self->masked_.data();
    }
    transform_logits(std::span<const float>(logits, n), self->sampling_, std::span<double>(out, n));
    return nullptr;
  } catch (const std::exception& e) {
    return host_table()->status_create(nullptr, SPECD_STATUS_INVALID_ARGUMENT, e.what());
  }
}

Proposer::Proposer(const LoadedPlugin& plugin, const ProposerConfig& config,
                   const ProposerSetup& setup)
    : plugin_(&plugin),
      vtable_(static_cast<const specd_proposer_vtable*>(plugin.vtable)),
      sampling_(setup.sampling),
      vocab_(setup.vocab_size),
      n_tokens_(setup.n_tokens),
      max_nodes_(setup.max_nodes),
      what_("proposer '" + plugin.name + "'" +
            (config.model.empty() ? "" : " (model " + config.model + ")")) {
  if (vtable_->struct_size < offsetof(specd_proposer_vtable, commit) + sizeof(vtable_->commit))
    throw Error(plugin.id + ": proposer vtable is too small");
  transform_ = {sizeof(specd_transform), vocab_, this, &Proposer::apply_transform,
                sampling_.temperature};
  std::vector<const char*> texts;
  texts.reserve(setup.token_texts.size());
  for (const auto& t : setup.token_texts) texts.push_back(t.c_str());
  specd_proposer_context context{sizeof(specd_proposer_context),
                                 vocab_,
                                 setup.hidden_dim,
                                 max_nodes_,
                                 setup.target_path.c_str(),
                                 texts.data(),
                                 static_cast<uint32_t>(config.k),
                                 0};
  PluginParams params(config.params, plugin.abi_minor);
  throw_if_error(vtable_->create(host_table(), params.raw(),
                                 config.model.empty() ? nullptr : config.model.c_str(), &context,
                                 &transform_, &object_),
                 what_);
}

Proposer::~Proposer() {
  if (object_) vtable_->destroy(object_);
}

void Proposer::begin(std::span<const specd_token> prompt, const float* hidden) {
  throw_runtime_if_error(
      vtable_->begin(object_, prompt.data(), static_cast<uint32_t>(prompt.size()), hidden),
      what_ + ": begin");
}

void Proposer::propose(std::span<const specd_token> sequence, uint32_t capacity, Rng& rng,
                       Draft& draft) {
  capacity = std::min(capacity, max_nodes_);
  draft.vocab = vocab_;
  draft.tokens.assign(capacity, 0);
  draft.parents.assign(capacity, 0);
  bool wants_q = flags() & SPECD_PROPOSER_PROVIDES_Q;
  draft.q.assign(wants_q ? (static_cast<size_t>(capacity) + 1) * vocab_ : 0, 0.0);
  specd_draft_output out{sizeof(specd_draft_output),
                         capacity,
                         draft.tokens.data(),
                         draft.parents.data(),
                         wants_q ? draft.q.data() : nullptr,
                         0,
                         SPECD_SIBLINGS_DETERMINISTIC,
                         0,
                         0};
  throw_runtime_if_error(vtable_->propose(object_, sequence.data(),
                                          static_cast<uint32_t>(sequence.size()), &rng, &out),
                         what_ + ": propose");
  if (out.n_nodes > capacity)
    throw Error(what_ + " returned " + std::to_string(out.n_nodes) + " nodes, more than the " +
                std::to_string(capacity) + " it was given room for");
  if (out.has_q && !wants_q)
    throw Error(what_ + " returned q without declaring SPECD_PROPOSER_PROVIDES_Q");
  draft.n_nodes = out.n_nodes;
  draft.scheme = out.scheme;
  draft.has_q = out.has_q != 0;
}

void Proposer::commit(std::span<const specd_token> accepted, specd_token next,
                      const float* hidden) {
  throw_runtime_if_error(vtable_->commit(object_, accepted.data(),
                                         static_cast<uint32_t>(accepted.size()), next, hidden),
                         what_ + ": commit");
}

}  // namespace specd
