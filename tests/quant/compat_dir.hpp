// Where the llama.cpp reference data lives (../shared/compat next to the source tree), and a
// clear skip message when it is absent.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include "test_paths.hpp"
#include "test_skip.hpp"

namespace specd::test {

inline std::string quant_compat_dir() {
  return std::string(SPECD_SOURCE_DIR) + "/../shared/compat/quant";
}

// True when the folder exists; otherwise tells why the case is skipped.
inline bool have_quant_compat() {
  if (std::filesystem::is_directory(quant_compat_dir())) return true;
  ::specd::test::skip_missing("llama.cpp reference data not found at ", quant_compat_dir(),
                              " (see shared/compat/README.md)");
  return false;
}

}  // namespace specd::test
