// The compute roof of the CPU backend's integer kernel family (plugins/cpu/qint.hpp): how many
// 8-bit multiply-adds one core retires per second through 512-bit vpdpbusd, measured, so that
// specd-matmul-bench can show how far the cost of each extra row is from it.
#pragma once

namespace specd::bench {

// Multiply-adds per second of one thread issuing independent 512-bit vpdpbusd (64 each), best
// of 15 short runs; 0 when this CPU has no AVX-512 VNNI (no such roof to set against).
double int8_mac_roof();

}  // namespace specd::bench
