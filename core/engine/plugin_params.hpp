// The [proposer] / [acceptance] keys a plugin receives, as the ABI's specd_params.
#pragma once

#include <vector>

#include "config/config.hpp"
#include "specd/types.h"

namespace specd {

class PluginParams {
 public:
  explicit PluginParams(const std::vector<PluginParam>& params);
  // Valid while this object lives.
  const specd_params* raw() const { return &params_; }

 private:
  std::vector<specd_param> items_;
  specd_params params_{};
};

}  // namespace specd
