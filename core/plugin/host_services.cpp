#include "plugin/host_services.hpp"

#include <cstdio>
#include <mutex>
#include <new>
#include <type_traits>

#include "specd/model.h"

#include "common/error.hpp"
#include "common/log.hpp"

struct specd_status {
  specd_status_code code;
  std::string message;
};

namespace specd {
namespace {

// Returned when allocating a status fails; never freed.
specd_status g_out_of_memory{SPECD_STATUS_OUT_OF_MEMORY, "out of memory (creating a status)"};

void host_log(void*, specd_log_level level, const char* plugin_id, const char* message) {
  log_message(static_cast<LogLevel>(level),
              std::string(plugin_id ? plugin_id : "plugin") + ": " + (message ? message : ""));
}

specd_status* host_status_create(void*, specd_status_code code, const char* message) {
  try {
    return new specd_status{code, message ? message : ""};
  } catch (...) {
    return &g_out_of_memory;
  }
}

void host_status_free(void*, specd_status* status) {
  if (status != &g_out_of_memory) delete status;
}

specd_status_code host_status_code(void*, const specd_status* status) {
  return status ? status->code : 0;
}

const char* host_status_message(void*, const specd_status* status) {
  return status ? status->message.c_str() : "";
}

double host_rng_uniform(void*, specd_rng* rng) {
  return rng->uniform();
}
uint64_t host_retired_rng_bits(void*, specd_rng* rng) {
  return rng->engine();
}

// The models slot of the process-wide table: models are served to proposers only, through the
// host table their create() receives (engine/model_service.hpp, whose context is the run's).
// Every entry refuses or does nothing; no model can come from this table.
specd_status* models_unserved() {
  return host_status_create(nullptr, SPECD_STATUS_UNSUPPORTED,
                            "models are served to proposers only, through the host table "
                            "their create() received");
}
template <class F>
struct Unserved;
template <class... A>
struct Unserved<specd_status* (*)(A...)> {
  static specd_status* call(A...) { return models_unserved(); }
};
template <class... A>
struct Unserved<void (*)(A...)> {
  static void call(A...) {}
};
template <class... A>
struct Unserved<uint32_t (*)(A...)> {
  static uint32_t call(A...) { return 0; }
};

const specd_model_api* unserved_models() {
  static const specd_model_api api = [] {
    specd_model_api a{};
    a.struct_size = sizeof(a);
    auto set = [](auto& slot) { slot = &Unserved<std::remove_reference_t<decltype(slot)>>::call; };
    set(a.open);
    set(a.close);
    set(a.info);
    set(a.check_vocabulary);
    set(a.cache_create);
    set(a.cache_free);
    set(a.cache_size);
    set(a.forward);
    set(a.commit);
    set(a.truncate);
    set(a.head_open);
    set(a.head_forward);
    set(a.forward_rows);
    set(a.forward_batch);
    set(a.head_encode);
    set(a.text);
    return a;
  }();
  return &api;
}

const specd_host g_host = {
    sizeof(specd_host),
    SPECD_ABI_VERSION_MAJOR,
    SPECD_ABI_VERSION_MINOR,
    nullptr,
    &host_log,
    &host_status_create,
    &host_status_free,
    &host_status_code,
    &host_status_message,
    &host_rng_uniform,
    &host_retired_rng_bits,
    unserved_models(),
};

}  // namespace

const specd_host* host_table() {
  return &g_host;
}

std::string status_message(const specd_status* status) {
  return status ? status->message : std::string();
}

void throw_if_error(specd_status* status, const std::string& context) {
  if (!status) return;
  std::string message = context.empty() ? status->message : context + ": " + status->message;
  specd_status_code code = status->code;
  host_status_free(nullptr, status);
  if (code == SPECD_STATUS_INVALID_ARGUMENT) throw UsageError(message);
  throw Error(message);
}

void throw_runtime_if_error(specd_status* status, const std::string& context) {
  try {
    throw_if_error(status, context);
  } catch (const UsageError& e) {
    throw Error(e.what());
  }
}

}  // namespace specd
