// Host-side argument checks of the GPU backends: the SDK's view and range checks
// (specd/cpp/backend.hpp, shared with the CPU backend) plus the alignment the kernels' loads
// need. Each op's shapes were checked by the SDK's adapter (specd/cpp/op_contract.hpp).
#pragma once

#include <initializer_list>
#include <string>

#include "args.hpp"
#include "buffer.hpp"

namespace specd::gpu {

[[noreturn]] void fail(const char* op, const std::string& what);

// Checks a view and returns its validated form; throws naming `op` and `arg` (UNSUPPORTED
// for a dtype outside `dtypes`, INVALID_ARGUMENT otherwise).
Mat check_view(const specd_view* v, const char* op, const char* arg,
               std::initializer_list<specd_dtype> dtypes);

void check_range(const specd_buffer* b, uint64_t offset, uint64_t size, const char* op);
bool overlaps(const Mat& a, const Mat& b);
uint64_t row_bytes(const Mat& a);

}  // namespace specd::gpu
