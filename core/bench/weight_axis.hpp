// Weight precision as an axis of an ordinary bench file: `[bench] target_types` and
// `draft_types` (weight presets: f16, q8_0, q4_K_M, ... bench/weight_presets.hpp). Each cell
// runs once per target type on a quantized copy of the base target (plain decoding of that
// copy is its baseline), and each arm with a proposer model runs once per draft type on a
// copy of its model, so a report shows how τ and speedup move when the draft, the target
// or both are quantized. Copies are written once into a models folder and reused while
// their source and preset are unchanged (weight_copy.hpp ensure_weight_copy).
#pragma once

#include <string>

#include "bench/bench_config.hpp"
#include "bench/bench_runner.hpp"

namespace specd::bench {

// Expands `plan` (from plan_from_config) along the config's target and draft types,
// writing the copies under `dir`. Does nothing when both lists are empty. Throws
// UsageError naming the bench file when an axis has no model to quantize.
void apply_weight_axis(RunPlan& plan, const BenchConfig& config, const std::string& dir);

}  // namespace specd::bench
