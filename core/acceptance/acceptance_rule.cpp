#include "acceptance/acceptance_rule.hpp"

#include <cmath>
#include <utility>

#include "acceptance/result_validation.hpp"
#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"

namespace specd {
namespace {

// Smallest vtable that has every field this wrapper calls (ABI 0.1).
constexpr size_t kMinVtableSize = offsetof(specd_acceptance_vtable, outcomes) + sizeof(void*);

}  // namespace

AcceptanceRule::AcceptanceRule(const LoadedPlugin& plugin, const specd_params* params) {
  info_.id = plugin.id;
  info_.name = plugin.name.empty() ? plugin.id : plugin.name;
  if (plugin.kind != SPECD_KIND_ACCEPTANCE || plugin.vtable == nullptr)
    throw Error("plugin '" + plugin.id + "' is not an acceptance rule");
  vtable_ = static_cast<const specd_acceptance_vtable*>(plugin.vtable);
  if (vtable_->struct_size < kMinVtableSize || !vtable_->create || !vtable_->destroy ||
      !vtable_->accept)
    throw Error("plugin '" + plugin.id + "' has an incomplete acceptance vtable");
  info_.label = vtable_->label;
  info_.flags = vtable_->flags;
  throw_if_error(vtable_->create(host_table(), params, &object_), plugin.id);
  if (object_ == nullptr) throw Error("plugin '" + plugin.id + "' created no rule object");
}

AcceptanceRule::~AcceptanceRule() {
  if (object_) vtable_->destroy(object_);
}

AcceptanceRule::AcceptanceRule(AcceptanceRule&& other) noexcept
    : info_(std::move(other.info_)),
      vtable_(other.vtable_),
      object_(std::exchange(other.object_, nullptr)) {}

AcceptResult AcceptanceRule::accept(const specd_draft_tree& tree, const specd_target_dists& target,
                                    Rng& rng) const {
  AcceptResult out;
  const uint32_t depth = tree_depth(tree);
  out.path.assign(depth + 1, -1);  // one spare slot: a rule overrunning its capacity shows up
  specd_accept_result result{};
  result.struct_size = sizeof(specd_accept_result);
  result.path_capacity = depth;
  result.path = out.path.data();
  result.path_length = 0;
  result.next_token = -1;
  specd_status* status = vtable_->accept(object_, &tree, &target, &rng, &result);
  if (status) {
    // A bad result of a rule is an Error (exit 1) whatever code it used.
    const std::string message = status_message(status);
    host_table()->status_free(host_table()->context, status);
    throw Error(info_.id + ": " + message);
  }
  if (result.path_length > depth)
    throw Error("acceptance rule '" + info_.id + "' wrote " + std::to_string(result.path_length) +
                " path nodes into a buffer of " + std::to_string(depth));
  validate_accept_result(out.path.data(), result.path_length, result.next_token, tree,
                         target.vocab_size, info_.id);
  out.path.resize(result.path_length);
  out.next_token = result.next_token;
  return out;
}

std::vector<AcceptOutcome> AcceptanceRule::outcomes(const specd_draft_tree& tree,
                                                    const specd_target_dists& target) const {
  if (!vtable_->outcomes)
    throw Error("acceptance rule '" + info_.id + "' does not report exact outcomes");
  struct Sink {
    std::vector<AcceptOutcome> list;
    bool bad_probability = false;
  } sink;
  auto emit = [](void* user, const int32_t* path, uint32_t length, specd_token next,
                 double probability) {
    auto* s = static_cast<Sink*>(user);
    if (!std::isfinite(probability) || probability < 0) s->bad_probability = true;
    s->list.push_back({std::vector<int32_t>(path, path + length), next, probability});
  };
  specd_status* status = vtable_->outcomes(object_, &tree, &target, emit, &sink);
  if (status) {
    const std::string message = status_message(status);
    host_table()->status_free(host_table()->context, status);
    throw Error(info_.id + ": " + message);
  }
  if (sink.bad_probability)
    throw Error("acceptance rule '" + info_.id +
                "' reported a negative or non-finite outcome "
                "probability");
  double total = 0;
  for (const AcceptOutcome& o : sink.list) {
    validate_accept_result(o.path.data(), static_cast<uint32_t>(o.path.size()), o.next_token, tree,
                           target.vocab_size, info_.id);
    total += o.probability;
  }
  if (std::fabs(total - 1.0) > 1e-9)
    throw Error("acceptance rule '" + info_.id + "' reported outcome probabilities summing to " +
                std::to_string(total) + " (must be 1)");
  return std::move(sink.list);
}

}  // namespace specd
