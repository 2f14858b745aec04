// Random-weight head GGUF files (train/FORMATS.md, sections 3-6) bound to a given target
// file: specd-medusa, specd-eagle and specd-mtp, with the target's name and token_embd
// digest recorded (or a wrong one, to test the binding check).
#pragma once

#include <cstdint>
#include <string>

namespace specd::test {

struct RandomHeadSpec {
  uint32_t medusa_heads = 4;  // Medusa's K
  uint32_t n_head = 4;        // EAGLE/MTP block
  uint32_t n_head_kv = 2;
  uint32_t n_ff = 96;
  uint64_t seed = 1;
  float weight_scale = 0.08f;
  std::string bind_name;    // "" = the target's general.name
  std::string bind_digest;  // "" = the target's token_embd digest
};

// Each writes the head to `path`, bound to the llama file `target_path`.
void write_random_medusa(const std::string& path, const std::string& target_path,
                         const RandomHeadSpec& spec);
void write_random_eagle(const std::string& path, const std::string& target_path,
                        const RandomHeadSpec& spec);
void write_random_mtp(const std::string& path, const std::string& target_path,
                      const RandomHeadSpec& spec);

}  // namespace specd::test
