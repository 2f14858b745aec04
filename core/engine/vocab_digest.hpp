// A digest of a vocabulary, so that a drafting machine and a remote verifier can tell that
// their token ids mean the same texts (specd_verifier_info.vocab_digest).
#pragma once

#include <cstdint>
#include <string>

namespace specd {

class Tokenizer;

// FNV-1a 64 over the token count and then, per id, the text's length (4 bytes, little
// endian) and bytes. Never 0 (0 means "not known" in the ABI).
uint64_t vocab_digest(const Tokenizer& tokenizer);

// 16 lowercase hex digits.
std::string digest_hex(uint64_t digest);

}  // namespace specd
