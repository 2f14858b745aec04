// specd SDK (header-only C++ helpers) — the host table, errors and parameters.
//
// Plugin code throws specd::sdk::PluginError (or any std::exception); the export macros in
// plugin.hpp catch everything at the ABI boundary and turn it into a specd_status*. Nothing
// here needs a core header or library: plugins link against nothing from specd.
#pragma once

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "specd/host.h"
#include "specd/status.h"
#include "specd/types.h"

namespace specd::sdk {

// An error with an ABI status code. Thrown inside plugins, converted at the boundary.
class PluginError : public std::runtime_error {
 public:
  PluginError(specd_status_code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  specd_status_code code() const { return code_; }

 private:
  specd_status_code code_;
};

inline PluginError invalid_argument(const std::string& message) {
  return PluginError(SPECD_STATUS_INVALID_ARGUMENT, message);
}

// Thin view of the host table; copyable, does not own it.
class Host {
 public:
  Host() = default;
  explicit Host(const specd_host* host) : host_(host) {}
  const specd_host* raw() const { return host_; }

  void log(specd_log_level level, const char* plugin_id, const std::string& message) const {
    if (host_ && host_->log) host_->log(host_->context, level, plugin_id, message.c_str());
  }
  specd_status* status(specd_status_code code, const std::string& message) const {
    return host_->status_create(host_->context, code, message.c_str());
  }
  double uniform(specd_rng* rng) const { return host_->rng_uniform(host_->context, rng); }

  // Throws PluginError with the status's code and message (and frees it); NULL is a no-op.
  // For statuses returned by host services such as host->models.
  void check(specd_status* status) const {
    if (!status) return;
    std::string message = host_->status_message(host_->context, status);
    specd_status_code code = host_->status_code(host_->context, status);
    host_->status_free(host_->context, status);
    throw PluginError(code, message);
  }

 private:
  const specd_host* host_ = nullptr;
};

// Runs `body`, converting any exception into a host status (NULL on success).
template <class Body>
specd_status* guard(const specd_host* host, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const PluginError& e) {
    return host->status_create(host->context, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return host->status_create(host->context, SPECD_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return host->status_create(host->context, SPECD_STATUS_INTERNAL, e.what());
  } catch (...) {
    return host->status_create(host->context, SPECD_STATUS_INTERNAL,
                               "unknown exception inside plugin");
  }
}

// Read access to a plugin's configuration table (specd_params).
class Params {
 public:
  explicit Params(const specd_params* params) : params_(params) {}

  const specd_param* find(std::string_view key) const {
    if (!params_) return nullptr;
    for (uint32_t i = 0; i < params_->count; ++i)
      if (key == params_->items[i].key) return &params_->items[i];
    return nullptr;
  }

  // Throws if any key is not in `known`, naming the key and where it is.
  void require_known(std::initializer_list<std::string_view> known) const {
    if (!params_) return;
    for (uint32_t i = 0; i < params_->count; ++i) {
      const specd_param& p = params_->items[i];
      bool ok = false;
      for (std::string_view k : known) ok = ok || k == p.key;
      if (!ok) {
        std::string list;
        for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        throw invalid_argument(where(p) + "unknown key '" + p.key + "'" +
                               (list.empty() ? std::string(" (this plugin takes no keys)")
                                             : " (known: " + list + ")"));
      }
    }
  }

  double get_float(std::string_view key, double fallback) const {
    const specd_param* p = find(key);
    if (!p) return fallback;
    if (p->type != SPECD_PARAM_FLOAT && p->type != SPECD_PARAM_INT)
      throw invalid_argument(where(*p) + "key '" + p->key + "' must be a number");
    return p->float_value;
  }

  int64_t get_int(std::string_view key, int64_t fallback) const {
    const specd_param* p = find(key);
    if (!p) return fallback;
    if (p->type != SPECD_PARAM_INT)
      throw invalid_argument(where(*p) + "key '" + p->key + "' must be an integer");
    return p->int_value;
  }

  bool get_bool(std::string_view key, bool fallback) const {
    const specd_param* p = find(key);
    if (!p) return fallback;
    if (p->type != SPECD_PARAM_BOOL)
      throw invalid_argument(where(*p) + "key '" + p->key + "' must be true or false");
    return p->bool_value != 0;
  }

  std::string get_string(std::string_view key, const std::string& fallback) const {
    const specd_param* p = find(key);
    if (!p) return fallback;
    if (p->type != SPECD_PARAM_STRING)
      throw invalid_argument(where(*p) + "key '" + p->key + "' must be a string");
    return p->string_value;
  }

  // A string key restricted to `choices`; the first choice when the key is absent.
  std::string get_choice(std::string_view key,
                         std::initializer_list<std::string_view> choices) const {
    const std::string value = get_string(key, std::string(*choices.begin()));
    std::string list;
    for (std::string_view c : choices) {
      if (value == c) return value;
      list += (list.empty() ? "\"" : ", \"") + std::string(c) + "\"";
    }
    throw invalid(key, "must be one of " + list + ", not \"" + value + "\"");
  }

  // Array keys (ABI 0.2; see types.h). Each returns `fallback` when the key is absent and
  // throws, naming the key and its location, when it is not an array of that kind.
  std::vector<int64_t> get_ints(std::string_view key, std::vector<int64_t> fallback) const {
    const specd_param_array* a = find_array(key, "an array of integers, e.g. [1, 2]");
    if (!a) return fallback;
    require_elements(key, *a, SPECD_PARAM_INT, "an array of integers, e.g. [1, 2]");
    return std::vector<int64_t>(a->ints, a->ints + a->count);
  }

  // Integers and floats alike.
  std::vector<double> get_floats(std::string_view key, std::vector<double> fallback) const {
    const char* what = "an array of numbers, e.g. [0.5, 1]";
    const specd_param_array* a = find_array(key, what);
    if (!a) return fallback;
    if (a->count && a->element_type != SPECD_PARAM_INT)
      require_elements(key, *a, SPECD_PARAM_FLOAT, what);
    return std::vector<double>(a->floats, a->floats + a->count);
  }

  std::vector<std::string> get_strings(std::string_view key,
                                       std::vector<std::string> fallback) const {
    const char* what = "an array of strings, e.g. [\"a\", \"b\"]";
    const specd_param_array* a = find_array(key, what);
    if (!a) return fallback;
    require_elements(key, *a, SPECD_PARAM_STRING, what);
    return std::vector<std::string>(a->strings, a->strings + a->count);
  }

  // An array of integer arrays, e.g. Medusa's choices [[0], [0, 1], [1]].
  std::vector<std::vector<int64_t>> get_int_lists(
      std::string_view key, std::vector<std::vector<int64_t>> fallback) const {
    const char* what = "an array of integer arrays, e.g. [[0], [0, 1]]";
    const specd_param_array* a = find_array(key, what);
    if (!a) return fallback;
    require_elements(key, *a, SPECD_PARAM_ARRAY, what);
    std::vector<std::vector<int64_t>> out;
    for (uint32_t i = 0; i < a->count; ++i) {
      const specd_param_array& inner = *a->arrays[i];
      require_elements(key, inner, SPECD_PARAM_INT, what);
      out.emplace_back(inner.ints, inner.ints + inner.count);
    }
    return out;
  }

  // The array value of `key`: nullptr when absent; throws "must be <what>" when the key is
  // not an array (or is one the host could only give as text: mixed kinds, tables).
  const specd_param_array* find_array(std::string_view key, std::string_view what) const {
    const specd_param* p = find(key);
    if (!p) return nullptr;
    const specd_param_array* a = nullptr;
    if (p->type == SPECD_PARAM_ARRAY && SPECD_PARAMS_HAS(params_, arrays) && params_->arrays)
      a = params_->arrays[p - params_->items];
    if (!a) throw invalid(key, "must be " + std::string(what));
    return a;
  }

  // "file:line:col: " prefix for messages about `p`, or "" when unknown.
  static std::string where(const specd_param& p) {
    return p.location && *p.location ? std::string(p.location) + ": " : std::string();
  }

  // The error for a value out of its range: "<file:line:col>: key '<key>' <requirement>"
  // (the location when the key was given), to throw as `throw params.invalid("k", "must be
  // >= 1");`.
  PluginError invalid(std::string_view key, const std::string& requirement) const {
    const specd_param* p = find(key);
    return invalid_argument((p ? where(*p) : std::string()) + "key '" + std::string(key) + "' " +
                            requirement);
  }

 private:
  // Empty arrays pass whatever `type` is asked for.
  void require_elements(std::string_view key, const specd_param_array& a, specd_param_type type,
                        std::string_view what) const {
    if (a.count && a.element_type != type) throw invalid(key, "must be " + std::string(what));
  }

  const specd_params* params_;
};

}  // namespace specd::sdk
