// Memory-traffic figures for specd-model-bench: how many weight bytes one decoding step
// reads, and the machine's measured bandwidths to set them against.
#pragma once

#include <cstdint>
#include <string>

namespace specd::bench {

// Bytes of the matrices a decode step streams: every 2-D tensor of the GGUF file except the
// token embedding table (one row of it is gathered), which is counted when the output
// projection is tied to it. Of a mixture of experts' 3-D expert tensors, the share of the
// experts a token goes through (expert_used_count of expert_count).
uint64_t decode_weight_bytes(const std::string& gguf_path);

// memcpy of a 256 MiB buffer, best of 5, in bytes read plus bytes written per second (as
// STREAM's Copy counts), single thread.
double copy_bandwidth();

// Bytes per second that `threads` threads read at once, each streaming its own slice of a
// 256 MiB buffer (far past any cache; in 2 MiB pages, as the CPU device keeps weights, unless
// SPECD_CPU_HUGE_PAGES=0) with vector loads as wide as the CPU's and nothing else: the roof
// that a decoding step's matmuls, which stream the weights on the device's threads, run
// against. One thread's memcpy understates it: two threads of a 2-core Zen 4 VM read 23-36
// GB/s where one thread copied 18-22. The best of 7 passes after 0.2 s of warm-up: a roof is
// what the memory can give, and other tenants of a shared machine only take from it.
double read_bandwidth(int threads);

}  // namespace specd::bench
