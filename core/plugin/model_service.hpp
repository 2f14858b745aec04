// The host's model service (sdk/include/specd/model.h): plugins load GGUF models onto a
// backend and run them through the core's model code.
#pragma once

#include <string>

#include "specd/model.h"

namespace specd {

class PluginRegistry;
class Device;

// The service table the host hands to plugins (host->models).
const specd_model_api* model_service();

// While alive, model_service()->open may load models for the run described here (the
// engine holds one around proposer creation). A model asked for on the backend of `shared`
// (the target's device) with the run's threads runs on that device itself: one thread pool
// for target and draft, whose passes alternate on one thread anyway (two pools on the same
// cores would spin against each other). `shared` must outlive the models opened on it. Not
// reentrant across threads.
class ModelServiceScope {
 public:
  // `kv_dtype`: the KV cache rows of the models opened (f32, f16 or q8_0).
  ModelServiceScope(const PluginRegistry& registry, std::string default_backend, uint32_t threads,
                    Device* shared = nullptr, uint32_t kv_dtype = 0);
  ~ModelServiceScope();
  ModelServiceScope(const ModelServiceScope&) = delete;
  ModelServiceScope& operator=(const ModelServiceScope&) = delete;
};

// While alive (on this thread), model_service()->open and head_open load nothing: they
// fail with a message saying so, and refused_open() records it. check-config creates a
// proposer under one to run its parameter checks, which come before it opens its model.
class ModelCheckScope {
 public:
  ModelCheckScope();
  ~ModelCheckScope();
  ModelCheckScope(const ModelCheckScope&) = delete;
  ModelCheckScope& operator=(const ModelCheckScope&) = delete;
  bool refused_open() const;
};

}  // namespace specd
