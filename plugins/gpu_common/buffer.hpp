// A GPU backend buffer: device memory of the device that allocated it.
#pragma once

#include <stdint.h>

#include "specd/backend.h"

// Opaque to the host (backend.h).
struct specd_buffer {
  uint8_t* data = nullptr;  // device pointer (cudaMalloc / hipMalloc), 256-byte aligned
  uint64_t size = 0;
};
