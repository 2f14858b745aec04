// Attention sinks (backend.h, ABI 0.8) as every CPU attention kernel folds them in, written
// once so that all give the same bits: a head's sink joins the maximum after its keys' scores
// (as a score would: NaN never wins), and its weight exp_ref(sink - max) is added to the sum
// of the keys' weights after the last key. A null `sink` is no sink: the 0.7 bits.
#pragma once

#include "ops/vexp.hpp"

namespace specd::cpu {

inline float max_with_sink(float mx, const float* sink) {
  return sink && *sink > mx ? *sink : mx;
}

inline float sum_with_sink(float sum, const float* sink, float mx) {
  return sink ? sum + exp_ref(*sink - mx) : sum;
}

}  // namespace specd::cpu
