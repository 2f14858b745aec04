// A mixture-of-experts FFN (llama.cpp's build_moe_ffn for the architectures specd reads): a
// router matrix gives each row one logit per expert, the row is sent to its top n_used experts,
// each a SwiGLU FFN of its own (with biases, for gpt-oss), and their outputs are summed with
// the router's weights.
//
// The routing runs on the host: the router logits of a piece of rows are downloaded, each row
// picks its experts from its own logits alone, and the rows are grouped by expert so that each
// chosen expert's weights are read once for all the rows that chose it (one matmul over a row
// slice of the 3-D *_exps tensors). The experts' outputs come back to the host and are summed
// for each row in its own slot order. So a row's result depends only on the row: every op is
// row-wise (matmul's batch invariance, backend.h), and no sum mixes rows, whichever other rows
// share its experts or the pass.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"

namespace specd {

// How router logits become the chosen experts' weights (llama.cpp's gating functions).
enum class ExpertRouting : uint8_t {
  kNone,               // a dense FFN
  kSoftmaxNormalized,  // softmax over all experts, top n_used, weights divided by their sum
  kSoftmaxOfChosen,    // the top n_used logits, weights a softmax over those (SOFTMAX_WEIGHT)
};

// An expert's FFN: silu(gate) * up (SwiGLU), or gpt-oss's clamped form (backend.h's
// swiglu_oai with alpha 1.702 and limit 7, llama.cpp's LLM_FFN_SWIGLU_OAI_MOE).
enum class ExpertActivation : uint8_t { kSwiglu, kSwigluOai };

struct MoeShape {
  int32_t n_expert = 0;  // experts per layer
  int32_t n_used = 0;    // experts each row goes through
  int32_t n_ff = 0;      // an expert's hidden size
  ExpertRouting routing = ExpertRouting::kNone;
  ExpertActivation activation = ExpertActivation::kSwiglu;
  bool biases = false;      // MoeWeights' biases are there
  int32_t n_ff_shared = 0;  // the shared expert's hidden size (0: none)
  bool active() const { return routing != ExpertRouting::kNone; }
};

// llama.cpp's blk.N.ffn_gate_inp and ffn_{gate,up,down}_exps, each expert's rows one after
// another: expert e's gate is rows [e S, e S + F) of `gate` (S = expert_stride: F, or 2 F when
// gate and up are one ffn_gate_up_exps tensor and `up` is its view from row F), its up rows
// [e S, e S + F) of `up`, its down rows [e d, (e + 1) d).
// With biases, expert e's are row e of gate_bias, up_bias and down_bias, added to its outputs.
struct MoeWeights {
  View router;                // [E, d]
  View gate;                  // [E S, d]
  View up;                    // [E S, d] (fused: [E S - F, d])
  int64_t expert_stride = 0;  // S; 0 means F
  View down;                  // [E d, F]
  View router_bias;           // [1, E], added to the logits before routing
  View gate_bias;             // [E, F]
  View up_bias;               // [E, F]
  View down_bias;             // [E, d]
  // The shared expert (n_ff_shared > 0): a SwiGLU over every row, scaled by the sigmoid of
  // its gate's logit.
  View shared_gate_inp;  // [1, d]
  View shared_gate;      // [F_s, d]
  View shared_up;        // [F_s, d]
  View shared_down;      // [d, F_s]
};

// gpt-oss's clamped SwiGLU constants (llama.cpp's build_moe_ffn).
constexpr float kSwigluOaiAlpha = 1.702f, kSwigluOaiLimit = 7.0f;

// The experts chosen for one row from its router logits [n_expert] by shape.routing: `ids`
// and `weights` get n_used entries each, by falling weight (ties: the lower expert first; a
// NaN never wins a slot over a number). `ranked` is scratch (n_expert values).
void route_row(const MoeShape& shape, const float* logits, int32_t* ids, float* weights,
               std::vector<float>& ranked);

// The buffers of one MoE FFN pass of m rows (reused by every layer; one pass at a time).
class MoeScratch {
 public:
  void ensure(Device& device, const MoeShape& shape, int64_t n_embd, int64_t m);
  // Distinct experts the passes so far have run, summed over layers and pieces (a pass's
  // weight reads are these experts' matrices), and the pieces counted.
  int64_t experts_run = 0;

 private:
  friend View moe_ffn(Device&, const MoeShape&, const MoeWeights&, const View&, MoeScratch&);
  friend void add_shared_expert(Device&, const MoeShape&, const MoeWeights&, const View&,
                                MoeScratch&);
  int64_t rows_ = 0;
  // Device: router logits [m, E], grouped rows' sources [1, m k], the grouped rows [m k, d],
  // their gate and up [m k, F], the experts' outputs [m k, d], the weighted sums [m, d]; the
  // shared expert's gate logit [m, 1], gate and up [m, F_s] and output [m, d].
  Buffer logits, ids, picked, gate, up, out, sum, shared_logit, shared_gate, shared_up, shared_out;
  std::vector<float> host_logits, host_out, host_sum, weights, ranked, host_shared,
      host_shared_logit;
  std::vector<int32_t> chosen, first, next, order, slot_of;
};

// The experts' weighted sum for each row of h [p, d] (f32, p <= the rows ensured): a view
// [p, d] of the scratch, valid until its next use.
View moe_ffn(Device& device, const MoeShape& shape, const MoeWeights& w, const View& h,
             MoeScratch& scratch);

}  // namespace specd
