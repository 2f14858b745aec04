#include "engine/proposer.hpp"

#include <algorithm>
#include <optional>

#include "common/error.hpp"
#include "engine/model_service.hpp"
#include "engine/padding_mask.hpp"
#include "plugin/status_guard.hpp"
#include "tokenizer/tokenizer.hpp"

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

namespace {

// A setup without a model run refuses models (as a run without a registry does).
ProposerSetup with_models(ProposerSetup setup) {
  if (!setup.models) setup.models = std::make_shared<ModelRun>();
  return setup;
}

}  // namespace

Proposer::Proposer(const LoadedPlugin& plugin, const ProposerConfig& config,
                   const ProposerSetup& setup)
    : plugin_(&plugin),
      vtable_(static_cast<const specd_proposer_vtable*>(plugin.vtable)),
      config_(config),
      setup_(with_models(setup)),
      host_(model_host_table(*setup_.models)),
      params_(config_.params, plugin.abi_minor),  // points into config_
      sampling_(setup.sampling),
      vocab_(setup.vocab_size),
      n_tokens_(setup.n_tokens),
      max_nodes_(setup.max_nodes),
      what_("proposer '" + plugin.name + "'" +
            (config.model.empty() ? "" : " (model " + config.model + ")")) {
  if (vtable_->struct_size < offsetof(specd_proposer_vtable, commit) + sizeof(vtable_->commit))
    throw Error(plugin.id + ": proposer vtable is too small");
  // The batched form needs ABI 0.5 and all five slots; a plugin that sets the flag without
  // them is refused rather than driven half one way, half the other.
  if (vtable_->flags & SPECD_PROPOSER_BATCHED) {
    const bool slots = plugin.abi_minor >= 5 &&
                       vtable_->struct_size >= offsetof(specd_proposer_vtable, sequence_commit) +
                                                   sizeof(vtable_->sequence_commit) &&
                       vtable_->sequence_open && vtable_->sequence_close &&
                       vtable_->sequence_begin && vtable_->propose_batch &&
                       vtable_->sequence_commit;
    if (!slots)
      throw Error(plugin.id +
                  ": declares SPECD_PROPOSER_BATCHED but lacks the ABI 0.5 batched slots "
                  "(sequence_open, sequence_close, sequence_begin, propose_batch, "
                  "sequence_commit)");
    batched_ = true;
  } else if (!vtable_->begin || !vtable_->propose || !vtable_->commit) {
    throw Error(plugin.id + ": a per-sequence proposer needs begin, propose and commit");
  }
  transform_ = {sizeof(specd_transform), vocab_, this, &Proposer::apply_transform,
                sampling_.temperature};
  texts_.reserve(setup_.token_texts.size());
  for (const auto& t : setup_.token_texts) texts_.push_back(t.c_str());
  if (setup_.tokenizer) text_ = std::make_unique<TokenizerTextService>(*setup_.tokenizer);
  context_ = {sizeof(specd_proposer_context),
              vocab_,
              setup_.hidden_dim,
              max_nodes_,
              setup_.target_path.c_str(),
              texts_.data(),
              static_cast<uint32_t>(config_.k),
              0,
              text_ ? text_->table() : nullptr};
  void* first = create_object();
  if (batched_)
    object_ = first;
  else
    idle_objects_.push_back(first);
}

Proposer::~Proposer() {
  for (void* o : idle_objects_) vtable_->destroy(o);
  if (object_) vtable_->destroy(object_);
}

void* Proposer::create_object() const {
  void* object = nullptr;
  throw_if_error(vtable_->create(&host_, params_.raw(),
                                 config_.model.empty() ? nullptr : config_.model.c_str(), &context_,
                                 &transform_, &object),
                 what_);
  return object;
}

std::unique_ptr<ProposerSequence> Proposer::open() {
  if (batched_) {
    void* handle = nullptr;
    throw_runtime_if_error(vtable_->sequence_open(object_, &handle), what_ + ": sequence_open");
    return std::unique_ptr<ProposerSequence>(new ProposerSequence(*this, handle));
  }
  void* object = nullptr;
  if (!idle_objects_.empty()) {
    object = idle_objects_.back();
    idle_objects_.pop_back();
  } else {
    if (!setup_.models->registry)
      throw Error(what_ + ": no further sequences can be opened here (its models are not loaded)");
    object = create_object();
  }
  return std::unique_ptr<ProposerSequence>(new ProposerSequence(*this, object));
}

void Proposer::close(void* handle) {
  if (batched_)
    vtable_->sequence_close(object_, handle);
  else
    idle_objects_.push_back(handle);  // begin() starts it afresh for the next sequence
}

ProposerSequence::~ProposerSequence() {
  owner_->close(handle_);
}

void ProposerSequence::begin(std::span<const specd_token> prompt, const float* hidden) {
  const auto* vt = owner_->vtable_;
  const auto n = static_cast<uint32_t>(prompt.size());
  throw_runtime_if_error(
      owner_->batched_ ? vt->sequence_begin(owner_->object_, handle_, prompt.data(), n, hidden)
                       : vt->begin(handle_, prompt.data(), n, hidden),
      owner_->what_ + ": begin");
}

void ProposerSequence::commit(std::span<const specd_token> accepted, specd_token next,
                              const float* hidden) {
  const auto* vt = owner_->vtable_;
  const auto n = static_cast<uint32_t>(accepted.size());
  throw_runtime_if_error(owner_->batched_ ? vt->sequence_commit(owner_->object_, handle_,
                                                                accepted.data(), n, next, hidden)
                                          : vt->commit(handle_, accepted.data(), n, next, hidden),
                         owner_->what_ + ": commit");
}

void Proposer::prepare(ProposeCall& call, specd_draft_output& out) const {
  Draft& draft = *call.draft;
  const uint32_t capacity = std::min(call.capacity, max_nodes_);
  draft.vocab = vocab_;
  draft.n_nodes = 0;
  draft.has_q = false;
  draft.tokens.assign(capacity, 0);
  draft.parents.assign(capacity, 0);
  const bool wants_q = flags() & SPECD_PROPOSER_PROVIDES_Q;
  draft.q.assign(wants_q ? (static_cast<size_t>(capacity) + 1) * vocab_ : 0, 0.0);
  out = {sizeof(specd_draft_output),
         capacity,
         draft.tokens.data(),
         draft.parents.data(),
         wants_q ? draft.q.data() : nullptr,
         0,
         SPECD_SIBLINGS_DETERMINISTIC,
         0,
         0};
}

void Proposer::finish(ProposeCall& call, const specd_draft_output& out) const {
  if (out.n_nodes > out.capacity) {
    call.error = what_ + " returned " + std::to_string(out.n_nodes) + " nodes, more than the " +
                 std::to_string(out.capacity) + " it was given room for";
    return;
  }
  if (out.has_q && !(flags() & SPECD_PROPOSER_PROVIDES_Q)) {
    call.error = what_ + " returned q without declaring SPECD_PROPOSER_PROVIDES_Q";
    return;
  }
  call.draft->n_nodes = out.n_nodes;
  call.draft->scheme = out.scheme;
  call.draft->has_q = out.has_q != 0;
}

void Proposer::propose(std::span<ProposeCall> calls) {
  std::vector<specd_draft_output> outs(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].error.clear();
    prepare(calls[i], outs[i]);
  }
  if (!batched_) {
    for (size_t i = 0; i < calls.size(); ++i) {
      ProposeCall& c = calls[i];
      specd_status* status =
          vtable_->propose(c.sequence->handle_, c.tokens.data(),
                           static_cast<uint32_t>(c.tokens.size()), c.rng, &outs[i]);
      if (status) {
        c.error = what_ + ": propose: " + status_message(status);
        host_table()->status_free(nullptr, status);
        continue;
      }
      finish(c, outs[i]);
    }
    return;
  }
  std::vector<specd_propose_item> items(calls.size());
  std::vector<specd_propose_item*> pointers(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const ProposeCall& c = calls[i];
    items[i] = {sizeof(specd_propose_item),
                static_cast<uint32_t>(c.tokens.size()),
                c.sequence->handle_,
                c.tokens.data(),
                c.rng,
                &outs[i],
                nullptr,
                c.filter};
    pointers[i] = &items[i];
  }
  specd_status* status =
      vtable_->propose_batch(object_, pointers.data(), static_cast<uint32_t>(pointers.size()));
  // Item statuses are the host's to free whatever the call returned.
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!items[i].status) continue;
    calls[i].error = what_ + ": propose: " + status_message(items[i].status);
    host_table()->status_free(nullptr, items[i].status);
  }
  throw_runtime_if_error(status, what_ + ": propose");
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].error.empty()) finish(calls[i], outs[i]);
}

}  // namespace specd
