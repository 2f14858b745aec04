// Where a suite finds the source tree and the build tree.
//
// The absolute paths are compiled into one generated object (test_paths.cpp in the build
// folder), not into every suite: an absolute path on a compiler's command line makes each
// object of two checkouts differ, so the compiler cache could share none of them between
// CI runs. A suite's own paths (specd_test_paths() in tests/CMakeLists.txt) reach it as
// SPECD_BUILD_PATH("bin/specd") or SPECD_SOURCE_PATH("tests/..."): relative text, joined
// to the tree here at run time.
#pragma once

#include <string>

namespace specd::test {

// The checkout's root and the build folder (CMake's PROJECT_SOURCE_DIR and
// PROJECT_BINARY_DIR). Safe from any thread.
const std::string& source_dir();
const std::string& binary_dir();

}  // namespace specd::test

#define SPECD_SOURCE_DIR (::specd::test::source_dir())
#define SPECD_BINARY_DIR (::specd::test::binary_dir())
#define SPECD_SOURCE_PATH(relative) (::specd::test::source_dir() + "/" relative)
#define SPECD_BUILD_PATH(relative) (::specd::test::binary_dir() + "/" relative)
