// specd SDK — write a plugin as one C++ class plus one export macro.
//
//   class MyRule {
//    public:
//     MyRule(specd::sdk::Host host, const specd::sdk::Params& params);
//     void accept(const specd_draft_tree& tree, const specd_target_dists& target,
//                 specd_rng* rng, specd_accept_result& result);
//     // optional: exact outcome probabilities
//     void outcomes(const specd_draft_tree& tree, const specd_target_dists& target,
//                   specd_outcome_fn emit, void* user);
//   };
//   SPECD_ACCEPTANCE_PLUGIN(MyRule, "com.example.accept.mine", "mine", "1.0.0",
//                           "what it does", SPECD_LABEL_EXACT, SPECD_ACCEPT_NEEDS_Q | ...)
//
// The macro defines the vtable, the descriptor and the one exported symbol; every call is
// wrapped so that no exception crosses the ABI. Build the plugin with specd_add_plugin()
// from the CMake package so that only specd_plugin_entry is exported.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "specd/acceptance.h"
#include "specd/cpp/host.hpp"
#include "specd/entry.h"
#include "specd/proposer.h"

namespace specd::sdk::detail {

// The host table given to init; factories receive it again but callbacks do not.
inline const specd_host*& plugin_host() {
  static const specd_host* host = nullptr;
  return host;
}

inline specd_status* store_host(const specd_host* host) {
  plugin_host() = host;
  return nullptr;
}

template <class Rule>
struct AcceptanceAdapter {
  static specd_status* create(const specd_host* host, const specd_params* params, void** out) {
    return guard(host, [&] { *out = new Rule(Host(host), Params(params)); });
  }
  static void destroy(void* rule) { delete static_cast<Rule*>(rule); }
  static specd_status* accept(void* rule, const specd_draft_tree* tree,
                              const specd_target_dists* target, specd_rng* rng,
                              specd_accept_result* result) {
    return guard(plugin_host(),
                 [&] { static_cast<Rule*>(rule)->accept(*tree, *target, rng, *result); });
  }
  static specd_status* outcomes(void* rule, const specd_draft_tree* tree,
                                const specd_target_dists* target, specd_outcome_fn emit,
                                void* user) {
    if constexpr (requires(Rule & r) { r.outcomes(*tree, *target, emit, user); }) {
      return guard(plugin_host(),
                   [&] { static_cast<Rule*>(rule)->outcomes(*tree, *target, emit, user); });
    } else {
      return nullptr;
    }
  }
  static constexpr bool has_outcomes =
      requires(Rule & r, const specd_draft_tree& t, const specd_target_dists& d, specd_outcome_fn f,
               void* u) {
    r.outcomes(t, d, f, u);
  };
};

template <class Proposer>
struct ProposerAdapter {
  static specd_status* create(const specd_host* host, const specd_params* params,
                              const char* model_path, const specd_proposer_context* context,
                              const specd_transform* transform, void** out) {
    return guard(host, [&] {
      *out = new Proposer(Host(host), Params(params), model_path, *context, *transform);
    });
  }
  static void destroy(void* proposer) { delete static_cast<Proposer*>(proposer); }
  static specd_status* begin(void* proposer, const specd_token* tokens, uint32_t n,
                             const float* hidden) {
    return guard(plugin_host(), [&] {
      static_cast<Proposer*>(proposer)->begin(std::span<const specd_token>(tokens, n), hidden);
    });
  }
  static specd_status* propose(void* proposer, const specd_token* tokens, uint32_t n,
                               specd_rng* rng, specd_draft_output* out) {
    return guard(plugin_host(), [&] {
      static_cast<Proposer*>(proposer)->propose(std::span<const specd_token>(tokens, n), rng, *out);
    });
  }
  static specd_status* commit(void* proposer, const specd_token* accepted, uint32_t n,
                              specd_token next, const float* hidden) {
    return guard(plugin_host(), [&] {
      static_cast<Proposer*>(proposer)->commit(std::span<const specd_token>(accepted, n), next,
                                               hidden);
    });
  }
};

}  // namespace specd::sdk::detail

namespace specd::sdk {

// A tokenizer as a host service: the target's (specd_proposer_context.text), for proposers
// that draft in text, or a draft model's (specd_model_api.text). available() is false on a
// host without the service (older than it, or a target without a tokenizer). Calls throw
// PluginError with the host's message. [same-thread] as the proposer call it is used in; keep
// it no longer than the proposer object (or the model whose tokenizer it is).
class TextService {
 public:
  explicit TextService(const specd_proposer_context& context)
      : service_(context.struct_size >=
                         offsetof(specd_proposer_context, text) + sizeof(context.text)
                     ? context.text
                     : nullptr) {}
  explicit TextService(const specd_text_service* service) : service_(service) {}
  bool available() const { return service_ != nullptr; }
  // Whether encode takes flags (a host newer than 0.6's first text service).
  bool has_flags() const { return service_ && SPECD_TEXT_SERVICE_HAS(service_, encode_with); }

  // The ids of `text` on its own (specd_text_service.encode), or with `flags`
  // (SPECD_ENCODE_BOS, SPECD_ENCODE_CONTINUATION; encode_with, which has_flags() says the
  // host offers).
  std::vector<specd_token> encode(std::string_view text, uint32_t flags = 0) const {
    require();
    if (flags != 0 && !has_flags())
      throw PluginError(SPECD_STATUS_UNSUPPORTED,
                        "the host's text service takes no encode flags (older than encode_with)");
    std::vector<specd_token> ids(text.size() + 8);
    uint32_t n = 0;
    for (;;) {
      check(flags == 0 ? service_->encode(service_->context, text.data(), text.size(), ids.data(),
                                          static_cast<uint32_t>(ids.size()), &n)
                       : service_->encode_with(service_->context, text.data(), text.size(), flags,
                                               ids.data(), static_cast<uint32_t>(ids.size()), &n));
      if (n <= ids.size()) break;
      ids.resize(n);
    }
    ids.resize(n);
    return ids;
  }

  // The bytes of `ids` (specd_text_service.decode).
  std::string decode(std::span<const specd_token> ids) const {
    require();
    std::string text(ids.size() * 8 + 16, '\0');
    uint64_t n = 0;
    for (;;) {
      check(service_->decode(service_->context, ids.data(), static_cast<uint32_t>(ids.size()),
                             text.data(), text.size(), &n));
      if (n <= text.size()) break;
      text.resize(n);
    }
    text.resize(n);
    return text;
  }

 private:
  void require() const {
    if (!service_)
      throw PluginError(SPECD_STATUS_UNSUPPORTED,
                        "the host offers no text service (older than ABI 0.6's, or a target "
                        "without a tokenizer)");
  }
  static void check(specd_status* status) { Host(detail::plugin_host()).check(status); }
  const specd_text_service* service_;
};

// One sequence's part of a batched propose call (SPECD_BATCH_PROPOSER_PLUGIN): its state, its
// accepted tokens (root last), its generator and the buffers its draft goes into.
template <class Sequence>
struct ProposeItem {
  Sequence& sequence;
  std::span<const specd_token> tokens;
  specd_rng* rng;
  specd_draft_output& out;
  specd_propose_item* raw;
  // The sequence's output constraint (ABI 0.6), or null: from a host that passes none, or
  // for an unconstrained sequence.
  const specd_token_filter* filter = nullptr;
  // Starts this sequence's draft empty, its nodes to be drawn by `scheme`, with q rows when
  // `has_q` (what a proposer sets before drafting, so that a skipped item drafts nothing).
  void start_draft(specd_sibling_scheme scheme, bool has_q) const {
    out.n_nodes = 0;
    out.scheme = scheme;
    out.has_q = has_q ? 1 : 0;
  }
  // Marks this sequence's draft failed with `message` (the other items still count).
  void fail(specd_status_code code, const std::string& message) const {
    const specd_host* host = detail::plugin_host();
    if (raw->status) host->status_free(host->context, raw->status);
    raw->status = host->status_create(host->context, code, message.c_str());
  }
};

// Calls body(item) for each item; an exception thrown for one item fails that item alone.
template <class Items, class Body>
void for_each_item(Items&& items, Body&& body) {
  for (auto& item : items) {
    try {
      body(item);
    } catch (const PluginError& e) {
      item.fail(e.code(), e.what());
    } catch (const std::exception& e) {
      item.fail(SPECD_STATUS_INTERNAL, e.what());
    }
  }
}

}  // namespace specd::sdk

namespace specd::sdk::detail {

template <class Proposer>
struct BatchProposerAdapter {
  using Sequence = typename Proposer::Sequence;
  static specd_status* create(const specd_host* host, const specd_params* params,
                              const char* model_path, const specd_proposer_context* context,
                              const specd_transform* transform, void** out) {
    return guard(host, [&] {
      *out = new Proposer(Host(host), Params(params), model_path, *context, *transform);
    });
  }
  static void destroy(void* proposer) { delete static_cast<Proposer*>(proposer); }
  static specd_status* open(void* proposer, void** out) {
    return guard(plugin_host(), [&] { *out = static_cast<Proposer*>(proposer)->open().release(); });
  }
  static void close(void*, void* sequence) { delete static_cast<Sequence*>(sequence); }
  static specd_status* begin(void* proposer, void* sequence, const specd_token* tokens, uint32_t n,
                             const float* hidden) {
    return guard(plugin_host(), [&] {
      static_cast<Proposer*>(proposer)->begin(*static_cast<Sequence*>(sequence),
                                              std::span<const specd_token>(tokens, n), hidden);
    });
  }
  static specd_status* propose_batch(void* proposer, specd_propose_item* const* items, uint32_t n) {
    return guard(plugin_host(), [&] {
      std::vector<ProposeItem<Sequence>> batch;
      batch.reserve(n);
      for (uint32_t i = 0; i < n; ++i) {
        specd_propose_item* it = items[i];
        const bool has_filter =
            it->struct_size >= offsetof(specd_propose_item, filter) + sizeof(it->filter);
        batch.push_back({*static_cast<Sequence*>(it->sequence),
                         std::span<const specd_token>(it->tokens, it->n_tokens), it->rng, *it->out,
                         it, has_filter ? it->filter : nullptr});
      }
      static_cast<Proposer*>(proposer)->propose(std::span<ProposeItem<Sequence>>(batch));
    });
  }
  static specd_status* commit(void* proposer, void* sequence, const specd_token* accepted,
                              uint32_t n, specd_token next, const float* hidden) {
    return guard(plugin_host(), [&] {
      static_cast<Proposer*>(proposer)->commit(*static_cast<Sequence*>(sequence),
                                               std::span<const specd_token>(accepted, n), next,
                                               hidden);
    });
  }
};

}  // namespace specd::sdk::detail

// A batched proposer plugin (ABI 0.5): one CLASS object drafts for many sequences. CLASS has
//   using Sequence = ...;  // one sequence's state
//   CLASS(specd::sdk::Host, const specd::sdk::Params&, const char* model_path,
//         const specd_proposer_context&, const specd_transform&);
//   std::unique_ptr<Sequence> open();
//   void begin(Sequence& s, std::span<const specd_token> prompt, const float* hidden);
//   void propose(std::span<specd::sdk::ProposeItem<Sequence>> items);
//   void commit(Sequence& s, std::span<const specd_token> accepted, specd_token next,
//               const float* hidden);
// propose drafts for every item (item.out as a per-sequence propose fills it); an exception
// fails the whole call, item.fail() (or for_each_item) one sequence.
#define SPECD_BATCH_PROPOSER_PLUGIN(CLASS, ID, NAME, VERSION, DESCRIPTION, FLAGS, DEFAULT_RULE) \
  namespace {                                                                                   \
  using specd_sdk_batch_adapter = specd::sdk::detail::BatchProposerAdapter<CLASS>;              \
  const specd_proposer_vtable specd_sdk_proposer_vtable = {                                     \
      sizeof(specd_proposer_vtable),                                                            \
      0,                                                                                        \
      (FLAGS) | SPECD_PROPOSER_BATCHED,                                                         \
      (DEFAULT_RULE),                                                                           \
      &specd_sdk_batch_adapter::create,                                                         \
      &specd_sdk_batch_adapter::destroy,                                                        \
      nullptr,                                                                                  \
      nullptr,                                                                                  \
      nullptr,                                                                                  \
      &specd_sdk_batch_adapter::open,                                                           \
      &specd_sdk_batch_adapter::close,                                                          \
      &specd_sdk_batch_adapter::begin,                                                          \
      &specd_sdk_batch_adapter::propose_batch,                                                  \
      &specd_sdk_batch_adapter::commit};                                                        \
  }                                                                                             \
  SPECD_DEFINE_PLUGIN_ENTRY(SPECD_KIND_PROPOSER, ID, NAME, VERSION, DESCRIPTION,                \
                            &specd_sdk_proposer_vtable)

// A per-sequence proposer plugin (the host drives one object per sequence): CLASS has
//   CLASS(specd::sdk::Host, const specd::sdk::Params&, const char* model_path,
//         const specd_proposer_context&, const specd_transform&);
//   void begin(std::span<const specd_token> prompt, const float* hidden);
//   void propose(std::span<const specd_token> sequence, specd_rng* rng, specd_draft_output& out);
//   void commit(std::span<const specd_token> accepted, specd_token next, const float* hidden);
#define SPECD_PROPOSER_PLUGIN(CLASS, ID, NAME, VERSION, DESCRIPTION, FLAGS, DEFAULT_RULE)        \
  namespace {                                                                                    \
  using specd_sdk_proposer_adapter = specd::sdk::detail::ProposerAdapter<CLASS>;                 \
  const specd_proposer_vtable specd_sdk_proposer_vtable = {sizeof(specd_proposer_vtable),        \
                                                           0,                                    \
                                                           (FLAGS),                              \
                                                           (DEFAULT_RULE),                       \
                                                           &specd_sdk_proposer_adapter::create,  \
                                                           &specd_sdk_proposer_adapter::destroy, \
                                                           &specd_sdk_proposer_adapter::begin,   \
                                                           &specd_sdk_proposer_adapter::propose, \
                                                           &specd_sdk_proposer_adapter::commit,  \
                                                           nullptr,                              \
                                                           nullptr,                              \
                                                           nullptr,                              \
                                                           nullptr,                              \
                                                           nullptr};                             \
  }                                                                                              \
  SPECD_DEFINE_PLUGIN_ENTRY(SPECD_KIND_PROPOSER, ID, NAME, VERSION, DESCRIPTION,                 \
                            &specd_sdk_proposer_vtable)

// Defines the descriptor and the exported entry point; `vtable_expr` is a pointer to the
// kind's static vtable.
#define SPECD_DEFINE_PLUGIN_ENTRY(KIND, ID, NAME, VERSION, DESCRIPTION, VTABLE_PTR)               \
  namespace {                                                                                     \
  const void* specd_sdk_get_vtable(specd_plugin_kind kind) {                                      \
    return kind == (KIND) ? static_cast<const void*>(VTABLE_PTR) : nullptr;                       \
  }                                                                                               \
  const specd_plugin_descriptor specd_sdk_descriptor = {sizeof(specd_plugin_descriptor),          \
                                                        SPECD_ABI_VERSION_MAJOR,                  \
                                                        SPECD_ABI_VERSION_MINOR,                  \
                                                        (KIND),                                   \
                                                        (ID),                                     \
                                                        (VERSION),                                \
                                                        (NAME),                                   \
                                                        (DESCRIPTION),                            \
                                                        &specd::sdk::detail::store_host,          \
                                                        nullptr,                                  \
                                                        &specd_sdk_get_vtable,                    \
                                                        SPECD_PLUGIN_MIN_HOST_ABI_MINOR};         \
  }                                                                                               \
  extern "C" SPECD_EXPORT const specd_plugin_descriptor* specd_plugin_entry(uint32_t, uint32_t) { \
    return &specd_sdk_descriptor;                                                                 \
  }

#define SPECD_ACCEPTANCE_PLUGIN(CLASS, ID, NAME, VERSION, DESCRIPTION, LABEL, FLAGS) \
  namespace {                                                                        \
  using specd_sdk_adapter = specd::sdk::detail::AcceptanceAdapter<CLASS>;            \
  const specd_acceptance_vtable specd_sdk_acceptance_vtable = {                      \
      sizeof(specd_acceptance_vtable),                                               \
      (LABEL),                                                                       \
      (FLAGS),                                                                       \
      &specd_sdk_adapter::create,                                                    \
      &specd_sdk_adapter::destroy,                                                   \
      &specd_sdk_adapter::accept,                                                    \
      specd_sdk_adapter::has_outcomes ? &specd_sdk_adapter::outcomes : nullptr};     \
  }                                                                                  \
  SPECD_DEFINE_PLUGIN_ENTRY(SPECD_KIND_ACCEPTANCE, ID, NAME, VERSION, DESCRIPTION,   \
                            &specd_sdk_acceptance_vtable)
