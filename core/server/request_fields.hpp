// Reading the fields of a request body: each reader checks the JSON type and range and
// throws RequestError (400) naming the field (OpenAI's "param") and what was wrong.
// Thread rule: pure functions.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace specd::server {

[[noreturn]] void bad(const std::string& param, const std::string& message);
// "a string", "an array", ... for messages.
const char* kind_of(const nlohmann::json& v);
double number(const std::string& param, const nlohmann::json& v, double lo, double hi,
              const std::string& range);
int64_t integer(const std::string& param, const nlohmann::json& v, int64_t lo, int64_t hi,
                const std::string& range);
std::string string(const std::string& param, const nlohmann::json& v);
bool boolean(const std::string& param, const nlohmann::json& v);
// Refuses a key of `obj` outside `known`, naming it as prefix + key.
void check_known(const nlohmann::json& obj, const std::set<std::string>& known,
                 const std::string& prefix);

}  // namespace specd::server
