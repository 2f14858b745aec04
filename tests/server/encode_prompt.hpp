// A prompt's tokens for a batching job, as `specd run` encodes a prompt (BOS when the model
// adds one, special-token text as plain text), with the scheduler's engine: on its worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batching/scheduler.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::test {

inline std::vector<int32_t> encode_prompt(batching::Scheduler& scheduler, const std::string& text) {
  std::vector<int32_t> tokens;
  scheduler.run_exclusive([&] {
    tokens = scheduler.engines().engine().tokenizer().encode(text, /*add_special=*/true,
                                                             /*parse_special=*/false);
  });
  return tokens;
}

}  // namespace specd::test
