// The host's model service (sdk/include/specd/model.h): proposers load GGUF models onto a
// backend and run them through the core's model code. It sits above the models and the
// plugin host: a proposer receives a host table of its own whose context is its run.
#pragma once

#include <cstdint>
#include <string>

#include "specd/host.h"
#include "specd/model.h"

namespace specd {

class PluginRegistry;
class Device;

// What the models a proposer opens load onto. A model asked for on the backend of `shared`
// (the target's device) with the run's threads runs on that device itself: one thread pool
// for target and draft, whose passes alternate on one thread anyway (two pools on the same
// cores would spin against each other). `shared` must outlive the models opened on it.
struct ModelRun {
  // Null: a configuration is being checked. Opens are then refused with a message saying
  // so, and refused_open records it (check-config creates a proposer to run its parameter
  // checks, which come before it opens its model).
  const PluginRegistry* registry = nullptr;
  std::string default_backend;
  uint32_t threads = 0;
  Device* shared = nullptr;
  uint32_t kv_dtype = 0;  // the KV cache rows of the models opened (f32, f16 or q8_0)
  bool refused_open = false;
};

// The process's host table with context = &run and the model service in its models slot:
// what a proposer's create() receives. `run` must outlive the table and every plugin object
// created with it. A run is used by one thread at a time.
specd_host model_host_table(ModelRun& run);

}  // namespace specd
