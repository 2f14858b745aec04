// Memory-traffic figures for specd-model-bench: how many weight bytes one decoding step
// reads, and the machine's measured copy bandwidth to set them against.
#pragma once

#include <cstdint>
#include <string>

namespace specd::bench {

// Bytes of the matrices a decode step streams: every 2-D tensor of the GGUF file except the
// token embedding table (one row of it is gathered), which is counted when the output
// projection is tied to it.
uint64_t decode_weight_bytes(const std::string& gguf_path);

// memcpy of a 256 MiB buffer, best of 5, in bytes read plus bytes written per second (as
// STREAM's Copy counts), single thread.
double copy_bandwidth();

}  // namespace specd::bench
