// The host adapter over specd_verifier_vtable: status objects become exceptions naming the
// verifier, the committed count is kept here, the info is read through struct_size.
#include "engine/verifier.hpp"

#include "common/error.hpp"
#include "plugin/host_services.hpp"

namespace specd {
namespace {

// Builds the error context only when there is an error: these run every round.
void check(specd_status* status, const std::string& what, const char* step) {
  if (status) throw_runtime_if_error(status, what + ": " + step);
}

specd_verifier_info read_info(const specd_verifier_vtable* vtable, void* object,
                              const std::string& what) {
  specd_verifier_info info{};
  info.struct_size = sizeof(info);
  check(vtable->info(object, &info), what, "info");
  return info;
}

}  // namespace

Verifier::Verifier(const specd_verifier_vtable* vtable, void* object, std::string what)
    : vtable_(vtable), object_(object), what_(std::move(what)) {
  try {
    if (vtable_->struct_size < offsetof(specd_verifier_vtable, commit) + sizeof(vtable_->commit))
      throw Error(what_ + ": verifier vtable is too small");
    info_ = read_info(vtable_, object_, what_);
    if (info_.vocab_size == 0) throw Error(what_ + " reports a vocabulary of 0 tokens");
    if (info_.context_length < 2)
      throw Error(what_ + " reports a context of " + std::to_string(info_.context_length) +
                  " tokens (at least 2 are needed)");
  } catch (...) {
    vtable_->destroy(object_);
    throw;
  }
}

Verifier::~Verifier() {
  vtable_->destroy(object_);
}

void Verifier::begin(std::span<const specd_token> prompt, float* hidden) {
  if (prompt.empty()) throw UsageError("the prompt is empty");
  if (prompt.size() > info_.context_length)
    throw UsageError("the prompt has " + std::to_string(prompt.size()) +
                     " tokens, more than the context of " + std::to_string(info_.context_length));
  committed_ = 0;
  check(vtable_->begin(object_, prompt.data(), static_cast<uint32_t>(prompt.size()), hidden), what_,
        "begin");
  committed_ = static_cast<uint32_t>(prompt.size() - 1);
}

void Verifier::verify(specd_token root, const specd_draft_tree& tree, float* logits,
                      float* hidden) {
  if (committed_ + tree.n_nodes + 1 > info_.context_length)
    throw Error(what_ + ": the draft does not fit the context");
  check(vtable_->verify(object_, root, &tree, logits, hidden), what_, "verify");
  last_overhead_s_ = 0;
  if (info_.struct_size >= offsetof(specd_verifier_info, last_overhead_s) + sizeof(double)) {
    const specd_verifier_info now = read_info(vtable_, object_, what_);
    if (now.struct_size >= offsetof(specd_verifier_info, last_overhead_s) + sizeof(double) &&
        now.last_overhead_s > 0)
      last_overhead_s_ = now.last_overhead_s;
  }
}

void Verifier::commit(std::span<const int32_t> path) {
  check(vtable_->commit(object_, path.data(), static_cast<uint32_t>(path.size())), what_, "commit");
  committed_ += static_cast<uint32_t>(path.size() + 1);
}

}  // namespace specd
