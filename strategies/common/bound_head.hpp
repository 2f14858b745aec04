// A draft-head file opened through the host's model service (specd/model.h, head_open)
// against the run's target, checked to be of the expected architecture and of the target's
// width, and closed on destruction. Medusa uses it as is; EAGLE and MTP through FeatureHead.
// Thread rule: like its proposer, used by one thread at a time.
#pragma once

#include <specd/model.h>
#include <specd/proposer.h>
#include <specd/cpp/host.hpp>

#include <string>

namespace specd::strategies {

class BoundHead {
 public:
  // `who` names the proposer in messages; `architecture` is the head kind the file must
  // hold (specd-medusa, specd-eagle, specd-mtp).
  BoundHead(sdk::Host host, const std::string& who, const std::string& architecture,
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
      if (info_.architecture != architecture)
        throw sdk::invalid_argument(who + ": " + model_path + " is a " + info_.architecture +
                                    " file, not " + architecture);
      if (info_.hidden_dim != context.hidden_dim)
        throw sdk::invalid_argument(who + ": the head's width differs from the target's");
    } catch (...) {
      api_->close(host_->context, model_);
      throw;
    }
  }
  ~BoundHead() { api_->close(host_->context, model_); }
  BoundHead(const BoundHead&) = delete;
  BoundHead& operator=(const BoundHead&) = delete;

  const specd_model_info& info() const { return info_; }
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
