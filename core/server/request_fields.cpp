#include "server/request_fields.hpp"

#include <cmath>

#include "server/request.hpp"

namespace specd::server {

using nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw RequestError(400, param, "'" + param + "' " + message);
}

const char* kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a float";
    default:
      return "an integer";
  }
}

double number(const std::string& param, const json& v, double lo, double hi,
              const std::string& range) {
  if (!v.is_number()) bad(param, std::string("must be a number, not ") + kind_of(v));
  double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) bad(param, "is out of range (" + range + ")");
  return x;
}

int64_t integer(const std::string& param, const json& v, int64_t lo, int64_t hi,
                const std::string& range) {
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d != std::floor(d)) bad(param, "must be an integer, not a fraction");
  } else if (!v.is_number_integer()) {
    bad(param, std::string("must be an integer, not ") + kind_of(v));
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    bad(param, "is out of range (" + range + ")");
  double d = v.get<double>();
  if (d < double(lo) || d > double(hi)) bad(param, "is out of range (" + range + ")");
  return v.is_number_float() ? int64_t(d) : v.get<int64_t>();
}

std::string string(const std::string& param, const json& v) {
  if (!v.is_string()) bad(param, std::string("must be a string, not ") + kind_of(v));
  return v.get<std::string>();
}

bool boolean(const std::string& param, const json& v) {
  if (!v.is_boolean()) bad(param, std::string("must be true or false, not ") + kind_of(v));
  return v.get<bool>();
}

void check_known(const json& obj, const std::set<std::string>& known, const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!known.count(it.key()))
      throw RequestError(400, prefix + it.key(), "unknown field '" + prefix + it.key() + "'");
}

}  // namespace specd::server
