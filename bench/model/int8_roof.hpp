// The compute roof of the CPU backend's integer kernel family (plugins/cpu/qint/qint.hpp): how many
// 8-bit multiply-adds one core retires per second through 512-bit vpdpbusd, measured, so that
// specd-matmul-bench can show how far the cost of each extra row is from it, and
// specd-model-bench how much of it the machine gave while it timed v(m).
#pragma once

#include <vector>

namespace specd::bench {

// Multiply-adds per second of one thread issuing independent 512-bit vpdpbusd (64 each), best
// of 15 short runs; 0 when this CPU has no AVX-512 VNNI (no such roof to set against).
double int8_mac_roof();

// The same measure taken by `threads` threads at once, one figure per thread (each the best of
// its 15 runs), as the threads of a parallel forward see it: on a host whose cores other
// tenants share, it falls while they run integer vector work, and eight-row forwards, which
// are bound by these instructions, slow down with it. Empty without AVX-512 VNNI.
std::vector<double> int8_mac_roof_concurrent(int threads);

}  // namespace specd::bench
