// The host side of the ABI: the specd_host table handed to plugins, status objects, and the
// random number generator behind specd_rng.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "specd/host.h"
#include "specd/status.h"

// The ABI's opaque RNG handle. A std::mt19937_64 seeded from [engine] seed; every draw a
// plugin makes goes through it, so runs are reproducible.
struct specd_rng {
  std::mt19937_64 engine;
  explicit specd_rng(uint64_t seed) : engine(seed) {}
  double uniform() { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }
};

namespace specd {

using Rng = specd_rng;

// The process-wide host table (context NULL), given to backends, rules and verifiers. Its
// models slot serves nothing: proposers get a table of their own with the model service
// (engine/model_service.hpp). Valid for the life of the process. Thread-safe.
const specd_host* host_table();

// Turns a status returned by a plugin into an exception (specd::Error, or UsageError for
// SPECD_STATUS_INVALID_ARGUMENT), prefixed with `context` (e.g. the plugin id), and frees
// it. Does nothing for NULL.
void throw_if_error(specd_status* status, const std::string& context);

// The same for a plugin that is already running (a proposer, rule or verifier mid-generation):
// every code becomes specd::Error, since INVALID_ARGUMENT there is a runtime failure of the
// request, not a configuration mistake (exit 2).
void throw_runtime_if_error(specd_status* status, const std::string& context);

// Message of a status, without freeing it.
std::string status_message(const specd_status* status);

}  // namespace specd
