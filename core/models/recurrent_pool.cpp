#include "models/recurrent_pool.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"

namespace specd {

RecurrentPool::RecurrentPool(Device& device, int32_t n_layer, const RecurrentShape& shape,
                             RecurrentRestore restore)
    : device_(&device),
      n_layer_(n_layer),
      shape_(shape),
      restore_(restore),
      conv_width_(shape.conv_width()),
      ssm_width_(shape.ssm_width()) {
  if (n_layer <= 0 || conv_width_ <= 0 || ssm_width_ <= 0)
    throw Error("recurrent state pool: layers and state widths must be positive");
  zeros_.assign(static_cast<size_t>(std::max(conv_width_, ssm_width_)), 0.0f);
}

uint64_t RecurrentPool::bytes_per_slot() const {
  return static_cast<uint64_t>(n_layer_) * static_cast<uint64_t>(conv_width_ + ssm_width_) * 4;
}

void RecurrentPool::resize(int32_t want) {
  const int32_t have = slots();
  int32_t in_use = have;  // slots past the last one in use hold nothing worth copying
  while (in_use > 0 && !used_[static_cast<size_t>(in_use - 1)]) --in_use;
  std::vector<Buffer> conv, ssm;
  try {
    for (int32_t l = 0; l < n_layer_; ++l) {
      conv.push_back(device_->alloc(static_cast<uint64_t>(want) * conv_width_ * 4));
      ssm.push_back(device_->alloc(static_cast<uint64_t>(want) * ssm_width_ * 4));
      if (in_use == 0) continue;
      device_->copy_bytes(conv.back(), 0, conv_[l], 0,
                          static_cast<uint64_t>(in_use) * conv_width_ * 4);
      device_->copy_bytes(ssm.back(), 0, ssm_[l], 0,
                          static_cast<uint64_t>(in_use) * ssm_width_ * 4);
    }
  } catch (const Error& e) {
    throw Error("recurrent state: cannot grow to " + std::to_string(want) + " sequence states (" +
                std::to_string((static_cast<uint64_t>(want) * bytes_per_slot()) >> 20) +
                " MiB): " + e.what());
  }
  if (in_use) device_->synchronize();
  conv_ = std::move(conv);
  ssm_ = std::move(ssm);
  used_.resize(static_cast<size_t>(want), false);
  for (int32_t s = want - 1; s >= have; --s) free_.insert(free_.begin(), s);
}

int32_t RecurrentPool::take() {
  if (free_.empty()) resize(std::max(2 * slots(), 4));
  const int32_t s = free_.back();
  free_.pop_back();
  used_[static_cast<size_t>(s)] = true;
  for (int32_t l = 0; l < n_layer_; ++l) {
    conv_[l].upload(zeros_.data(), static_cast<uint64_t>(conv_width_) * 4,
                    static_cast<uint64_t>(s) * conv_width_ * 4);
    ssm_[l].upload(zeros_.data(), static_cast<uint64_t>(ssm_width_) * 4,
                   static_cast<uint64_t>(s) * ssm_width_ * 4);
  }
  return s;
}

void RecurrentPool::release(int32_t slot) {
  if (slot < 0 || slot >= slots() || !used_[static_cast<size_t>(slot)])
    throw Error("recurrent state pool: releasing slot " + std::to_string(slot) +
                ", which is not in use");
  used_[static_cast<size_t>(slot)] = false;
  free_.push_back(slot);
}

void RecurrentPool::copy(int32_t from, int32_t to) {
  for (int32_t l = 0; l < n_layer_; ++l) {
    device_->copy_bytes(conv_[l], static_cast<uint64_t>(to) * conv_width_ * 4, conv_[l],
                        static_cast<uint64_t>(from) * conv_width_ * 4,
                        static_cast<uint64_t>(conv_width_) * 4);
    device_->copy_bytes(ssm_[l], static_cast<uint64_t>(to) * ssm_width_ * 4, ssm_[l],
                        static_cast<uint64_t>(from) * ssm_width_ * 4,
                        static_cast<uint64_t>(ssm_width_) * 4);
  }
}

void RecurrentPool::begin_pass(int32_t rows) {
  ++pass_;
  if (rows <= replay_rows_) return;
  const int32_t want = std::max(rows, 2 * replay_rows_);
  const uint64_t width = static_cast<uint64_t>(shape_.channels + 2 * shape_.value_heads);
  replay_.clear();
  for (int32_t l = 0; l < n_layer_; ++l)
    replay_.push_back(device_->alloc(static_cast<uint64_t>(want) * width * 4));
  replay_rows_ = want;
}

View RecurrentPool::replay_qkv(int32_t layer, int32_t first, int32_t rows) const {
  const int64_t width = shape_.channels + 2 * shape_.value_heads;
  return replay_.at(static_cast<size_t>(layer))
      .view(SPECD_DTYPE_F32, rows, shape_.channels, static_cast<uint64_t>(first * width) * 4,
            width * 4);
}

View RecurrentPool::replay_alpha(int32_t layer, int32_t first, int32_t rows) const {
  const int64_t width = shape_.channels + 2 * shape_.value_heads;
  return replay_.at(static_cast<size_t>(layer))
      .view(SPECD_DTYPE_F32, rows, shape_.value_heads,
            static_cast<uint64_t>(first * width + shape_.channels) * 4, width * 4);
}

View RecurrentPool::replay_beta(int32_t layer, int32_t first, int32_t rows) const {
  const int64_t width = shape_.channels + 2 * shape_.value_heads;
  return replay_.at(static_cast<size_t>(layer))
      .view(SPECD_DTYPE_F32, rows, shape_.value_heads,
            static_cast<uint64_t>(first * width + shape_.channels + shape_.value_heads) * 4,
            width * 4);
}

View RecurrentPool::conv(int32_t layer) const {
  return conv_.at(static_cast<size_t>(layer)).view(SPECD_DTYPE_F32, slots(), conv_width_);
}

View RecurrentPool::ssm(int32_t layer) const {
  return ssm_.at(static_cast<size_t>(layer)).view(SPECD_DTYPE_F32, slots(), ssm_width_);
}

}  // namespace specd
