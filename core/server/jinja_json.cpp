#include "server/jinja_json.hpp"

namespace specd::server {
namespace {

// nlohmann's dump writes scalars as json.dumps(ensure_ascii=False) does: non-ASCII kept,
// \b \f \n \r \t and \u00xx for the other control characters.
std::string scalar(const nlohmann::ordered_json& v) {
  return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

std::string jinja_tojson(const nlohmann::ordered_json& v) {
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      out += (first ? "" : ", ") + scalar(k) + ": " + jinja_tojson(x);
      first = false;
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + jinja_tojson(v[i]);
    return out + "]";
  }
  return scalar(v);
}

}  // namespace specd::server
