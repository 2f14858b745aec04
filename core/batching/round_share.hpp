// Which sequences whose own round work is costly take part in a step, so that one request's
// expensive grammar (or other per-sequence work on the worker: masks over the vocabulary,
// penalties) is charged to that request, not to every sequence that shares its steps.
//
// A sequence's round work is what the worker spends on it after the pass (its end_round:
// masks, distributions, acceptance), serially with everyone's. A sequence is costly when its
// rounds (smoothed over the last few) take longer than the step's pass and more than
// kCostlyFloorSeconds. While some sequence that is not costly runs, one costly sequence
// takes part in each step, the one that has waited longest (so each progresses, in turn),
// and the others sit the step out: a step then costs its pass plus at most one costly round,
// however many expensive sequences run beside a cheap one. With only costly sequences
// running, every one takes part (holding one back would protect nobody).
//
// Thread rule: a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace specd::batching {

constexpr double kCostlyFloorSeconds = 0.005;

struct RoundCost {
  double round_s = 0;   // its rounds' work on the worker, smoothed (0: none yet)
  uint64_t waited = 0;  // steps it has sat out since it last took part
};

// true for each sequence that sits this step out. `pass_s`: the last step's pass.
std::vector<bool> hold_costly_rounds(std::span<const RoundCost> sequences, double pass_s);

}  // namespace specd::batching
