// Constants of the GGUF container shared by the reader and the writer.
#pragma once

#include <cstdint>

namespace specd {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian uint32
constexpr uint32_t kGgufDefaultAlignment = 32;
constexpr uint32_t kGgufMaxDims = 4;
// Arrays of arrays are legal GGUF; deeper nesting than this is treated as a corrupt file.
constexpr uint32_t kGgufMaxArrayDepth = 8;
constexpr const char* kGgufAlignmentKey = "general.alignment";

}  // namespace specd
