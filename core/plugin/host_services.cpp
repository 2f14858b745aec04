#include "plugin/host_services.hpp"

#include <cstdio>
#include <mutex>
#include <new>

#include "common/error.hpp"
#include "common/log.hpp"
#include "plugin/model_service.hpp"

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
    model_service(),
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
