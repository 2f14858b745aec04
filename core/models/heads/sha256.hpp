// SHA-256 (FIPS 180-4) of a byte range, as lowercase hexadecimal. Used to bind head files to
// the target whose embedding table they were trained against (train/FORMATS.md, section 3).
#pragma once

#include <cstddef>
#include <string>

namespace specd {

// 64 lowercase hexadecimal characters.
std::string sha256_hex(const void* data, size_t size);

}  // namespace specd
