// The supported architectures, one file each (see models/architecture.hpp for the fields).
#pragma once

#include "models/architecture.hpp"

namespace specd::architectures {

extern const Architecture kLlama;
extern const Architecture kQwen2;
extern const Architecture kQwen3;
extern const Architecture kPhi3;
extern const Architecture kQwen35;
extern const Architecture kQwen3Moe;
extern const Architecture kGptOss;
extern const Architecture kQwen35Moe;

}  // namespace specd::architectures
