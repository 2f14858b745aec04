// A draft-head file opened through the host's model service (specd/model.h, head_open)
// against the run's target, checked to be of an expected architecture and to take features
// of the width the verifier offers, and closed on destruction. Medusa uses it as is; EAGLE,
// EAGLE-3 and MTP through FeatureHead.
// Thread rule: like its proposer, used by one thread at a time.
#pragma once

#include <specd/model.h>
#include <specd/proposer.h>
#include <specd/cpp/host.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace specd::strategies {

class BoundHead {
 public:
  // `who` names the proposer in messages; `architectures` are the head kinds the file may
  // hold (specd-medusa, specd-eagle, eagle3, specd-mtp, dflash).
  BoundHead(sdk::Host host, const std::string& who, const std::vector<std::string>& architectures,
            const char* model_path, const specd_proposer_context& context)
      : host_(host.raw()), api_(host.raw()->models) {
    if (!model_path || !*model_path)
      throw sdk::invalid_argument(who + " needs [proposer] model = \"path/to/" + who + ".gguf\"");
    if (context.hidden_dim == 0)
      throw sdk::invalid_argument(who + " needs target features; the verifier offers none");
    check(api_->head_open(host_->context, model_path, context.target_path, nullptr, 0, &model_));
    try {
      info_.struct_size = sizeof(info_);
      check(api_->info(host_->context, model_, &info_));
      bool known = false;
      std::string expected;
      for (const std::string& a : architectures) {
        known = known || a == info_.architecture;
        expected += (expected.empty() ? "" : " or ") + a;
      }
      if (!known)
        throw sdk::invalid_argument(who + ": " + model_path + " is a " + info_.architecture +
                                    " file, not " + expected);
      if (input_dim() != context.hidden_dim)
        throw sdk::invalid_argument(
            who + ": " + model_path + " takes target features of width " +
            std::to_string(input_dim()) + ", the verifier offers " +
            std::to_string(context.hidden_dim) +
            (fuses() ? " (the host reads an EAGLE-3 head's target layers from [proposer] model)"
                     : ""));
      if (fuses() && api_->struct_size <= offsetof(specd_model_api, head_encode))
        throw sdk::invalid_argument(who + ": this host cannot run EAGLE-3 heads (no head_encode)");
    } catch (...) {
      api_->close(host_->context, model_);
      throw;
    }
  }
  ~BoundHead() { api_->close(host_->context, model_); }
  BoundHead(const BoundHead&) = delete;
  BoundHead& operator=(const BoundHead&) = delete;

  const specd_model_info& info() const { return info_; }
  // The width of the target features the head takes, and whether it fuses them into its own
  // width first (EAGLE-3, DFlash: head_encode; MTP layers: the target's output_norm).
  uint32_t input_dim() const { return info_.input_dim ? info_.input_dim : info_.hidden_dim; }
  bool fuses() const {
    const std::string a = info_.architecture;
    return input_dim() != info_.hidden_dim || a == "dflash" || a == "nextn";
  }
  specd_model* model() const { return model_; }
  const specd_model_api* api() const { return api_; }
  void* context() const { return host_->context; }  // the host context every api call takes

  void check(specd_status* status) const { sdk::Host(host_).check(status); }

 private:
  const specd_host* host_;
  const specd_model_api* api_;
  specd_model* model_ = nullptr;
  specd_model_info info_{};
};

}  // namespace specd::strategies
