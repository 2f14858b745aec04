// The [proposer] / [acceptance] keys a plugin receives, as the ABI's specd_params.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "specd/types.h"

namespace specd {

class PluginParams {
 public:
  // `plugin_abi_minor`: the ABI minor the plugin was built against. Plugins of minor < 2
  // receive arrays as SPECD_PARAM_STRING (their TOML text), as ABI 0.1 defined them.
  PluginParams(const std::vector<PluginParam>& params, uint32_t plugin_abi_minor);
  PluginParams(const PluginParams&) = delete;
  PluginParams& operator=(const PluginParams&) = delete;
  // Valid while this object lives.
  const specd_params* raw() const { return &params_; }

 private:
  // One array value and the storage its pointers point into.
  struct ArrayNode {
    specd_param_array value{};
    std::vector<specd_bool> bools;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<const char*> strings;
    std::vector<const specd_param_array*> arrays;
  };
  const specd_param_array* add_array(const PluginParam& param);

  std::deque<ArrayNode> nodes_;  // a deque: nodes never move once added
  std::vector<specd_param> items_;
  std::vector<const specd_param_array*> arrays_;
  specd_params params_{};
};

}  // namespace specd
