// JSON text as chat templates print it: the `tojson` filter that Hugging Face's transformers
// gives its Jinja environment (Python's json.dumps: ", " and ": " separators, keys in their
// order, non-ASCII characters kept as they are). The templates that print a tool's schema or
// a call's arguments print them so, and the model saw them so in training.
//
// Thread rule: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace specd::server {

std::string jinja_tojson(const nlohmann::ordered_json& value);

}  // namespace specd::server
