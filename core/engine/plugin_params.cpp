#include "engine/plugin_params.hpp"

namespace specd {

PluginParams::PluginParams(const std::vector<PluginParam>& params) {
  for (const PluginParam& p : params) {
    specd_param item{};
    item.struct_size = sizeof(specd_param);
    item.key = p.key.c_str();
    item.location = p.location.c_str();
    switch (p.type) {
      case PluginParam::Type::boolean:
        item.type = SPECD_PARAM_BOOL;
        item.bool_value = p.bool_value ? 1 : 0;
        break;
      case PluginParam::Type::integer:
        item.type = SPECD_PARAM_INT;
        item.int_value = p.int_value;
        item.float_value = p.float_value;
        break;
      case PluginParam::Type::floating:
        item.type = SPECD_PARAM_FLOAT;
        item.float_value = p.float_value;
        break;
      case PluginParam::Type::string:
        item.type = SPECD_PARAM_STRING;
        item.string_value = p.string_value.c_str();
        break;
    }
    items_.push_back(item);
  }
  params_ = {sizeof(specd_params), static_cast<uint32_t>(items_.size()), items_.data()};
}

}  // namespace specd
