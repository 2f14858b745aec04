// A copy of a llama GGUF model whose token ids are shuffled: every tokenizer entry and every
// row of token_embd and output moves with its id, so the copy spells the same texts and
// computes the same function of them as the original, in a vocabulary that differs id for id.
// Drafting across vocabularies (`[proposer] vocabulary = "text"` / "intersection") is
// measured with it against the same draft in the target's own vocabulary.
#pragma once

#include <cstdint>
#include <string>

namespace specd::bench {

// Writes the shuffled copy of `from` to `to` (permutation drawn from `seed`). Throws
// specd::Error naming the file when `from` has no tokenizer or is not a llama model file.
void write_shuffled_vocabulary(const std::string& from, const std::string& to, uint64_t seed);

}  // namespace specd::bench
