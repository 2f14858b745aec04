// The gated DeltaNet layer of hybrid models (backend.h, gated_delta_net) and the sigmoid-gated
// product of their attention layers, on the CPU. Each output row and state depends only on its
// own row's inputs and the state it starts from, computed in one fixed order whatever the
// thread count or which other rows share the call: batch invariant.
#pragma once

#include <cstdint>

#include "runtime/cpu_buffer.hpp"
#include "runtime/thread_pool.hpp"
#include "specd/backend.h"

namespace specd::cpu {

// The inputs of one call, already validated (slots in range, shapes as the contract says).
struct DeltaNetCall {
  Mat qkv, alpha, beta, conv_weight, dt_bias, a, conv_states, ssm_states, out;
  const int32_t* state_in;   // [m]
  const int32_t* state_out;  // [m]
  specd_delta_net_params p;
};

void gated_delta_net(ThreadPool& pool, const DeltaNetCall& call);

// y = x * sigmoid(gate), element by element (y may be x).
void mul_sigmoid(ThreadPool& pool, const Mat& x, const Mat& gate, const Mat& y);

}  // namespace specd::cpu
