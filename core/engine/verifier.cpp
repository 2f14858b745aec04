// The checks every verifier gets (verifier.hpp), and the one adapter over a plugin's
// specd_verifier_vtable.
#include "engine/verifier.hpp"

#include "common/error.hpp"
#include "models/llama_model.hpp"
#include "plugin/host_services.hpp"

namespace specd {

void Verifier::set_info(const specd_verifier_info& info) {
  info_ = info;
  if (info_.vocab_size == 0) throw Error(what_ + " reports a vocabulary of 0 tokens");
  if (info_.context_length < 2)
    throw Error(what_ + " reports a context of " + std::to_string(info_.context_length) +
                " tokens (at least 2 are needed)");
}

void Verifier::set_info(const LlamaModel& model, uint32_t context_length) {
  specd_verifier_info info{};
  info.struct_size = sizeof(info);
  info.vocab_size = static_cast<uint32_t>(model.info().vocab_size);
  info.hidden_dim = static_cast<uint32_t>(model.feature_dim());
  info.context_length = context_length;
  info.vocab_digest = 0;
  set_info(info);
}

void Verifier::begin(std::span<const specd_token> prompt, float* hidden) {
  if (prompt.empty()) throw UsageError("the prompt is empty");
  if (prompt.size() > info_.context_length)
    throw UsageError("the prompt has " + std::to_string(prompt.size()) +
                     " tokens, more than the context of " + std::to_string(info_.context_length));
  committed_ = 0;
  do_begin(prompt, hidden);
  committed_ = static_cast<uint32_t>(prompt.size() - 1);
}

void Verifier::verify(specd_token root, const specd_draft_tree& tree, float* logits,
                      float* hidden) {
  if (committed_ + tree.n_nodes + 1 > info_.context_length)
    throw Error(what_ + ": the draft does not fit the context");
  last_overhead_s_ = 0;
  do_verify(root, tree, logits, hidden);
}

void Verifier::commit(std::span<const int32_t> path) {
  do_commit(path);
  committed_ += static_cast<uint32_t>(path.size() + 1);
}

namespace {

// Builds the error context only when there is an error: these run every round.
void check(specd_status* status, const std::string& what, const char* step) {
  if (status) throw_runtime_if_error(status, what + ": " + step);
}

bool has_overhead(const specd_verifier_info& info) {
  return info.struct_size >= offsetof(specd_verifier_info, last_overhead_s) + sizeof(double);
}

class PluginVerifier final : public Verifier {
 public:
  PluginVerifier(const specd_verifier_vtable* vtable, void* object, std::string what)
      : Verifier(std::move(what)), vtable_(vtable), object_(object) {
    try {
      if (vtable_->struct_size < offsetof(specd_verifier_vtable, commit) + sizeof(vtable_->commit))
        throw Error(this->what() + ": verifier vtable is too small");
      info_struct_ = read_info();
      set_info(info_struct_);
    } catch (...) {
      vtable_->destroy(object_);
      throw;
    }
  }
  ~PluginVerifier() override { vtable_->destroy(object_); }

 private:
  specd_verifier_info read_info() const {
    specd_verifier_info info{};
    info.struct_size = sizeof(info);
    check(vtable_->info(object_, &info), what(), "info");
    return info;
  }
  void do_begin(std::span<const specd_token> prompt, float* hidden) override {
    check(vtable_->begin(object_, prompt.data(), static_cast<uint32_t>(prompt.size()), hidden),
          what(), "begin");
  }
  void do_verify(specd_token root, const specd_draft_tree& tree, float* logits,
                 float* hidden) override {
    check(vtable_->verify(object_, root, &tree, logits, hidden), what(), "verify");
    if (has_overhead(info_struct_)) {
      const specd_verifier_info now = read_info();
      if (has_overhead(now) && now.last_overhead_s > 0) last_overhead_s_ = now.last_overhead_s;
    }
  }
  void do_commit(std::span<const int32_t> path) override {
    check(vtable_->commit(object_, path.data(), static_cast<uint32_t>(path.size())), what(),
          "commit");
  }

  const specd_verifier_vtable* vtable_;
  void* object_;
  specd_verifier_info info_struct_{};  // as first read: which fields the plugin fills
};

}  // namespace

std::unique_ptr<Verifier> make_plugin_verifier(const specd_verifier_vtable* vtable, void* object,
                                               std::string what) {
  return std::make_unique<PluginVerifier>(vtable, object, std::move(what));
}

}  // namespace specd
