// phi3: Phi-3 and Phi-3.5 (dense). NEOX RoPE, q/k/v fused in attn_qkv.weight (llama.cpp also
// accepts separate tensors) and the FFN's gate and up fused in ffn_up.weight (gate rows
// first: llama.cpp's swiglu activates the first half). The fused tensors are read as row
// views, so the block runs the llama op sequence. The 128k variants' rope_factors_long/short
// tensors are not supported (refused as unread tensors).
#include "models/architectures/architectures.hpp"
#include "specd/backend.h"

namespace specd::architectures {

extern const Architecture kPhi3 = {
    .name = "phi3",
    .rope_mode = SPECD_ROPE_NEOX,
    .fused_qkv = Presence::kOptional,
    .fused_gate_up = true,
};

}  // namespace specd::architectures
