// Which target a head belongs to (train/FORMATS.md, section 3): the target's general.name and
// the SHA-256 of the raw bytes of its token_embd.weight, recorded in the head as
// specd.target.name / specd.target.digest.
#pragma once

#include <string>

#include "gguf/gguf_reader.hpp"

namespace specd {

struct TargetIdentity {
  std::string name;    // general.name ("" when absent)
  std::string digest;  // lowercase hex SHA-256 of token_embd.weight's data bytes
};

// Throws specd::Error when the target has no token_embd.weight.
TargetIdentity target_identity(const GgufFile& target);

// Throws specd::UsageError naming both files, both names and both digests when `head` is
// bound to another target: its digest differs (or, without a digest, its name differs), or
// it records neither.
void check_target_binding(const GgufFile& head, const GgufFile& target);

}  // namespace specd
