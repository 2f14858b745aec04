#include "engine/plugin_params.hpp"

namespace specd {

namespace {

specd_param_type abi_type(PluginParam::Type type) {
  switch (type) {
    case PluginParam::Type::boolean:
      return SPECD_PARAM_BOOL;
    case PluginParam::Type::integer:
      return SPECD_PARAM_INT;
    case PluginParam::Type::floating:
      return SPECD_PARAM_FLOAT;
    case PluginParam::Type::string:
      return SPECD_PARAM_STRING;
    case PluginParam::Type::array:
      return SPECD_PARAM_ARRAY;
  }
  return SPECD_PARAM_STRING;
}

}  // namespace

PluginParams::PluginParams(const std::vector<PluginParam>& params, uint32_t plugin_abi_minor) {
  const bool arrays = plugin_abi_minor >= 2;
  for (const PluginParam& p : params) {
    specd_param item{};
    item.struct_size = sizeof(specd_param);
    item.key = p.key.c_str();
    item.location = p.location.c_str();
    item.type = abi_type(p.type);
    item.bool_value = p.bool_value ? 1 : 0;
    item.int_value = p.int_value;
    item.float_value = p.float_value;
    item.string_value = p.string_value.c_str();
    const specd_param_array* array = nullptr;
    if (p.type == PluginParam::Type::array) {
      if (arrays)
        array = add_array(p);
      else
        item.type = SPECD_PARAM_STRING;  // ABI 0.1: the TOML text
    }
    items_.push_back(item);
    arrays_.push_back(array);
  }
  params_ = {sizeof(specd_params), static_cast<uint32_t>(items_.size()), items_.data(),
             arrays_.data()};
}

const specd_param_array* PluginParams::add_array(const PluginParam& param) {
  ArrayNode& node = nodes_.emplace_back();
  const auto count = param.elements.size();
  const specd_param_type type = count ? abi_type(param.elements.front().type) : 0;
  for (const PluginParam& e : param.elements) {
    switch (type) {
      case SPECD_PARAM_BOOL:
        node.bools.push_back(e.bool_value ? 1 : 0);
        break;
      case SPECD_PARAM_INT:
        node.ints.push_back(e.int_value);
        node.floats.push_back(static_cast<double>(e.int_value));
        break;
      case SPECD_PARAM_FLOAT:
        node.floats.push_back(e.float_value);
        break;
      case SPECD_PARAM_STRING:
        node.strings.push_back(e.string_value.c_str());
        break;
      default:
        node.arrays.push_back(add_array(e));  // may grow nodes_; `node` stays put (deque)
        break;
    }
  }
  auto data = [](const auto& v) { return v.empty() ? nullptr : v.data(); };
  node.value = {sizeof(specd_param_array),
                static_cast<uint32_t>(count),
                type,
                0,
                data(node.bools),
                data(node.ints),
                data(node.floats),
                data(node.strings),
                data(node.arrays)};
  return &node.value;
}

}  // namespace specd
