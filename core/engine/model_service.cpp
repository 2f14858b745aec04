#include "engine/model_service.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "common/error.hpp"
#include "engine/backend_selection.hpp"
#include "engine/text_service.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/heads/head_model.hpp"
#include "models/llama_model.hpp"
#include "plugin/host_services.hpp"
#include "plugin/registry.hpp"
#include "tokenizer/tokenizer.hpp"

struct specd_model {
  std::unique_ptr<specd::Backend> backend;  // its own backend and device, or
  std::unique_ptr<specd::Device> own_device;
  specd::Device* device = nullptr;           // its own, or the run's shared one (the target's)
  std::unique_ptr<specd::LlamaModel> model;  // a llama model, or
  std::unique_ptr<specd::HeadModel> head;    // a head bound to the target
  std::string path;
  std::string name;
  std::string backend_name;
  // The model's tokenizer as a text service, made when first asked for.
  std::unique_ptr<specd::Tokenizer> tokenizer;
  std::unique_ptr<specd::TokenizerTextService> text;
};

struct specd_model_cache {
  std::unique_ptr<specd::KvCache> cache;  // of a llama model, or
  std::unique_ptr<specd::KvCache> head;   // of an EAGLE/MTP head
};

namespace specd {
namespace {

// The run a model is opened for: the context of the host table the proposer received.
ModelRun& run_of(void* host_context, const char* what) {
  if (!host_context)
    throw Error(std::string(what) +
                " needs the host table the proposer's create() received (host->context)");
  return *static_cast<ModelRun*>(host_context);
}

// A run without a registry checks a configuration: opens are refused, and recorded.
void refuse_while_checking(ModelRun& run, const char* path) {
  if (run.registry) return;
  run.refused_open = true;
  throw Error(std::string(path ? path : "") +
              ": not opened while checking a configuration (its parameters are checked, the "
              "file only by run)");
}

template <class Body>
specd_status* guarded(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const UsageError& e) {
    return host_table()->status_create(nullptr, SPECD_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return host_table()->status_create(nullptr, SPECD_STATUS_IO, e.what());
  }
}

std::unique_ptr<specd_model> open_device(const ModelRun& run, const char* backend,
                                         uint32_t threads) {
  auto m = std::make_unique<specd_model>();
  std::string name = backend && *backend ? backend : run.default_backend;
  const LoadedPlugin& plugin = select_backend(*run.registry, name);
  const uint32_t want = threads ? threads : run.threads;
  if (Device* shared = run.shared;
      shared && shared->backend().id() == plugin.id && (want == 0 || want == run.threads)) {
    m->device = shared;
    m->backend_name = shared->backend().name();
    return m;
  }
  m->backend = std::make_unique<Backend>(plugin);
  DeviceOptions options;
  options.threads = want;
  m->own_device = m->backend->open(options);
  m->device = m->own_device.get();
  m->backend_name = m->backend->name();
  return m;
}

void require_llama(const specd_model* model, const char* what) {
  if (!model->model)
    throw UsageError(std::string(what) + ": " + model->path + " is a head; use head_forward");
}

specd_status* model_open(void* host_context, const char* path, const char* backend,
                         uint32_t threads, specd_model** out) {
  return guarded([&] {
    *out = nullptr;
    ModelRun& run = run_of(host_context, "models->open");
    refuse_while_checking(run, path);
    if (!path || !*path) throw UsageError("no model file given");
    auto m = open_device(run, backend, threads);
    m->model = LlamaModel::load(path, *m->device);
    if (m->model->info().hybrid())
      throw UsageError(std::string(path) + " is a hybrid model (recurrent gated DeltaNet " +
                       "layers): a draft model must return to any earlier position of its " +
                       "cache, which a recurrent state cannot; draft with its MTP layers " +
                       "([proposer] kind = \"mtp\") or a dense model of the same vocabulary");
    m->model->set_kv_dtype(run.kv_dtype);
    m->path = path;
    m->name = m->model->info().name;
    *out = m.release();
  });
}

void model_close(void*, specd_model* model) {
  delete model;
}

specd_status* model_info(void*, const specd_model* model, specd_model_info* info) {
  return guarded([&] {
    specd_model_info out{};
    out.struct_size = sizeof(specd_model_info);
    if (model->head) {
      const HeadInfo& hi = model->head->info();
      out.vocab_size = static_cast<uint32_t>(hi.vocab_size);
      out.hidden_dim = static_cast<uint32_t>(hi.n_embd);
      out.context_length = static_cast<uint32_t>(hi.n_ctx);
      out.architecture = hi.architecture.c_str();
      out.head_count = static_cast<uint32_t>(hi.n_heads);
      out.input_dim = static_cast<uint32_t>(hi.input_dim);
      out.block_size = static_cast<uint32_t>(hi.block_size);
      out.mask_token = hi.mask_token;
    } else {
      const ModelInfo& mi = model->model->info();
      out.vocab_size = static_cast<uint32_t>(mi.vocab_size);
      out.hidden_dim = static_cast<uint32_t>(mi.n_embd);
      out.context_length = static_cast<uint32_t>(mi.n_ctx);
      out.architecture = mi.architecture.c_str();
      out.mask_token = -1;
    }
    out.invariant_max_rows = model->device->info().invariant_max_rows;
    out.name = model->name.c_str();
    out.backend = model->backend_name.c_str();
    size_t n = std::min<size_t>(info->struct_size, sizeof(out));
    std::memcpy(info, &out, n);
    info->struct_size = static_cast<uint32_t>(n);
  });
}

specd_status* model_check_vocabulary(void*, const specd_model* model, const char* target_path) {
  return guarded([&] {
    require_llama(model, "check_vocabulary");
    Tokenizer draft = Tokenizer::from_gguf(model->model->file());  // parsed when loaded
    Tokenizer target = Tokenizer::from_gguf(GgufFile::open(target_path));
    std::string why;
    if (!same_vocabulary(target, draft, &why))
      throw UsageError("vocabulary mismatch between draft " + model->path + " and target " +
                       target_path + ": " + why);
  });
}

specd_status* model_text(void*, const specd_model* model, const specd_text_service** out) {
  if (model && model->head)
    return host_table()->status_create(
        nullptr, SPECD_STATUS_UNSUPPORTED,
        ("text: " + model->path + " is a head, which drafts in the target's vocabulary").c_str());
  return guarded([&] {
    if (!model || !out) throw UsageError("text: needs a model and out");
    auto* m = const_cast<specd_model*>(model);  // the service is made once, on first use
    if (!m->text) {
      m->tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_gguf(m->model->file()));
      m->text = std::make_unique<TokenizerTextService>(*m->tokenizer);
    }
    *out = m->text->table();
  });
}

specd_status* cache_create(void*, specd_model* model, uint32_t max_tokens,
                           specd_model_cache** out) {
  return guarded([&] {
    auto c = std::make_unique<specd_model_cache>();
    if (model->head)
      c->head = model->head->new_cache(static_cast<int32_t>(max_tokens));
    else
      c->cache = model->model->new_cache(static_cast<int32_t>(max_tokens));
    *out = c.release();
  });
}

void cache_free(void*, specd_model_cache* cache) {
  delete cache;
}

uint32_t cache_size(void*, const specd_model_cache* cache) {
  return static_cast<uint32_t>(cache->head ? cache->head->size() : cache->cache->size());
}

specd_status* model_forward(void*, specd_model* model, specd_model_cache* cache,
                            const specd_token* tokens, const int32_t* positions,
                            const int32_t* parents, uint32_t m, float* logits, float* hidden) {
  return guarded([&] {
    require_llama(model, "forward");
    model->model->forward(*cache->cache, std::span<const int32_t>(tokens, m),
                          std::span<const int32_t>(positions, m),
                          std::span<const int32_t>(parents, m), logits, hidden);
  });
}

specd_status* model_forward_rows(void*, specd_model* model, specd_model_cache* cache,
                                 const specd_token* tokens, const int32_t* positions,
                                 const int32_t* parents, uint32_t m, uint32_t first_logit_row,
                                 float* logits, float* hidden) {
  return guarded([&] {
    require_llama(model, "forward_rows");
    if (first_logit_row > m)
      throw UsageError("forward_rows: first_logit_row " + std::to_string(first_logit_row) +
                       " is past the " + std::to_string(m) + " rows");
    model->model->forward(*cache->cache, std::span<const int32_t>(tokens, m),
                          std::span<const int32_t>(positions, m),
                          std::span<const int32_t>(parents, m), logits, hidden,
                          static_cast<int32_t>(first_logit_row));
  });
}

specd_status* model_commit(void*, specd_model* model, specd_model_cache* cache, const int32_t* rows,
                           uint32_t n) {
  return guarded([&] {
    if (model->head)
      model->head->commit(*cache->head, std::span<const int32_t>(rows, n));
    else
      model->model->commit(*cache->cache, std::span<const int32_t>(rows, n));
  });
}

specd_status* model_truncate(void*, specd_model* model, specd_model_cache* cache, uint32_t n) {
  if (!model->head && cache->cache) {
    // Rows a sliding-window model gave back: the caller may start over from 0 (model.h).
    const std::string why = cache->cache->truncate_refusal(static_cast<int32_t>(n));
    if (!why.empty())
      return host_table()->status_create(nullptr, SPECD_STATUS_UNSUPPORTED, why.c_str());
  }
  return guarded([&] {
    if (model->head)
      model->head->truncate(*cache->head, static_cast<int32_t>(n));
    else
      model->model->truncate(*cache->cache, static_cast<int32_t>(n));
  });
}

specd_status* head_open(void* host_context, const char* path, const char* target_path,
                        const char* backend, uint32_t threads, specd_model** out) {
  return guarded([&] {
    *out = nullptr;
    ModelRun& run = run_of(host_context, "models->head_open");
    refuse_while_checking(run, path);
    if (!path || !*path) throw UsageError("no head file given");
    if (!target_path || !*target_path)
      throw UsageError("no target file given for head " + std::string(path));
    auto m = open_device(run, backend, threads);
    m->head = HeadModel::load(path, target_path, *m->device);
    if (m->head->has_cache()) m->head->set_kv_dtype(run.kv_dtype);
    m->path = path;
    m->name = m->head->info().name;
    *out = m.release();
  });
}

specd_status* head_forward(void*, specd_model* model, specd_model_cache* cache,
                           const float* features, const specd_token* tokens,
                           const int32_t* positions, const int32_t* parents, uint32_t m,
                           float* logits, float* hidden) {
  return guarded([&] {
    if (!model->head) throw UsageError("head_forward: " + model->path + " is not a head");
    if (m == 0) throw UsageError("head_forward: no rows");
    if (!model->head->has_cache()) {
      if (cache || tokens || positions || parents || hidden)
        throw UsageError("head_forward: a Medusa head takes features only");
      std::vector<int32_t> none(m, 0);
      model->head->forward(nullptr, features, none, none, none, logits, nullptr);
      return;
    }
    if (!cache || !cache->head) throw UsageError("head_forward: the head's cache is missing");
    model->head->forward(cache->head.get(), features, std::span<const int32_t>(tokens, m),
                         std::span<const int32_t>(positions, m),
                         std::span<const int32_t>(parents, m), logits, hidden);
  });
}

specd_status* head_encode(void*, specd_model* model, const float* target_features, uint32_t m,
                          float* features) {
  if (model && model->head && model->head->info().kind != HeadKind::kEagle3 &&
      model->head->info().kind != HeadKind::kDflash && model->head->info().kind != HeadKind::kNextn)
    return host_table()->status_create(
        nullptr, SPECD_STATUS_UNSUPPORTED,
        ("head_encode: " + model->path + " takes the target's features as they are").c_str());
  return guarded([&] {
    if (!model || !model->head) throw UsageError("head_encode: not a head");
    if (m == 0) throw UsageError("head_encode: no rows");
    if (!target_features || !features) throw UsageError("head_encode: null features");
    model->head->encode(target_features, static_cast<int32_t>(m), features);
  });
}

specd_status* model_forward_batch(void*, specd_model* model,
                                  const specd_model_batch_entry* const* entries, uint32_t n) {
  return guarded([&] {
    if (n == 0) throw UsageError("forward_batch: no entries");
    for (uint32_t e = 0; e < n; ++e) {
      const specd_model_batch_entry* en = entries[e];
      if (!en || en->struct_size < sizeof(specd_model_batch_entry))
        throw UsageError("forward_batch: entry " + std::to_string(e) + " is missing or too small");
      if (en->m == 0)
        throw UsageError("forward_batch: entry " + std::to_string(e) + " has no rows");
    }
    if (model->model) {
      std::vector<ForwardEntry> batch(n);
      for (uint32_t e = 0; e < n; ++e) {
        const specd_model_batch_entry& en = *entries[e];
        if (!en.cache || !en.cache->cache)
          throw UsageError("forward_batch: entry " + std::to_string(e) + " has no cache of " +
                           model->path);
        if (en.first_logit_row > en.m)
          throw UsageError("forward_batch: entry " + std::to_string(e) + ": first_logit_row " +
                           std::to_string(en.first_logit_row) + " is past its " +
                           std::to_string(en.m) + " rows");
        if (!en.tokens || !en.positions || !en.parents)
          throw UsageError("forward_batch: entry " + std::to_string(e) +
                           " lacks tokens, positions or parents");
        ForwardEntry& f = batch[e];
        f.cache = en.cache->cache.get();
        f.tokens = std::span<const int32_t>(en.tokens, en.m);
        f.positions = std::span<const int32_t>(en.positions, en.m);
        f.parents = std::span<const int32_t>(en.parents, en.m);
        f.logits = en.logits;
        f.hidden = en.hidden;
        f.first_logit_row = static_cast<int32_t>(en.first_logit_row);
      }
      model->model->forward_batch(batch);
      return;
    }
    const bool medusa = !model->head->has_cache();
    const bool dflash = model->head->info().kind == HeadKind::kDflash;
    std::vector<HeadModel::Entry> batch(n);
    for (uint32_t e = 0; e < n; ++e) {
      const specd_model_batch_entry& en = *entries[e];
      HeadModel::Entry& h = batch[e];
      if (dflash) {  // features to inject, or block rows (HeadModel::forward checks which)
        if (!en.cache || !en.cache->head || !en.positions || !en.parents)
          throw UsageError("forward_batch: entry " + std::to_string(e) +
                           " lacks the drafter's cache, positions or parents");
        h = {en.cache->head.get(),
             en.features,
             static_cast<int32_t>(en.m),
             en.tokens ? std::span<const int32_t>(en.tokens, en.m) : std::span<const int32_t>(),
             std::span<const int32_t>(en.positions, en.m),
             std::span<const int32_t>(en.parents, en.m),
             en.logits,
             en.hidden};
        continue;
      }
      if (!en.features || (!en.logits && en.first_logit_row < en.m))
        throw UsageError("forward_batch: entry " + std::to_string(e) + " lacks features or logits");
      if (en.first_logit_row > en.m)
        throw UsageError("forward_batch: entry " + std::to_string(e) + ": first_logit_row " +
                         std::to_string(en.first_logit_row) + " is past its " +
                         std::to_string(en.m) + " rows");
      h.features = en.features;
      h.m = static_cast<int32_t>(en.m);
      h.logits = en.logits;
      h.first_logit_row = static_cast<int32_t>(en.first_logit_row);
      if (medusa) {
        if (en.cache || en.tokens || en.positions || en.parents || en.hidden)
          throw UsageError("forward_batch: a Medusa head takes features only");
        continue;
      }
      if (!en.cache || !en.cache->head)
        throw UsageError("forward_batch: entry " + std::to_string(e) + " has no cache of " +
                         model->path);
      if (!en.tokens || !en.positions || !en.parents)
        throw UsageError("forward_batch: entry " + std::to_string(e) +
                         " lacks tokens, positions or parents");
      h.cache = en.cache->head.get();
      h.tokens = std::span<const int32_t>(en.tokens, en.m);
      h.positions = std::span<const int32_t>(en.positions, en.m);
      h.parents = std::span<const int32_t>(en.parents, en.m);
      h.hidden = en.hidden;
    }
    model->head->forward_batch(batch);
  });
}

const specd_model_api g_api = {sizeof(specd_model_api),
                               0,
                               &model_open,
                               &model_close,
                               &model_info,
                               &model_check_vocabulary,
                               &cache_create,
                               &cache_free,
                               &cache_size,
                               &model_forward,
                               &model_commit,
                               &model_truncate,
                               &head_open,
                               &head_forward,
                               &model_forward_rows,
                               &model_forward_batch,
                               &head_encode,
                               &model_text};

}  // namespace

specd_host model_host_table(ModelRun& run) {
  specd_host host = *host_table();
  host.context = &run;
  host.models = &g_api;
  return host;
}

}  // namespace specd
