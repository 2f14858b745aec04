#include "validate.hpp"

#include "specd/cpp/backend.hpp"

namespace specd::gpu {

void fail(const char* op, const std::string& what) {
  throw sdk::invalid_argument(std::string(op) + ": " + what);
}

uint64_t row_bytes(const Mat& a) {
  return sdk::dtype_row_bytes(a.dtype, a.cols);
}

Mat check_view(const specd_view* v, const char* op, const char* arg,
               std::initializer_list<specd_dtype> dtypes) {
  sdk::check_view_extent(v, op, arg, dtypes, [](const specd_buffer* b) { return b->size; });
  const std::string where = std::string(arg) + ": ";
  // Kernels load f32/i32 as 4-byte words and f16/bf16 values and block scales as 2-byte
  // words (the block sizes with such scales are even); mxfp4's 17-byte blocks are read a byte
  // at a time. Device memory faults on misaligned loads, so refuse them here (buffers are
  // 256-byte aligned).
  const uint64_t align = v->dtype == SPECD_DTYPE_F32 || v->dtype == SPECD_DTYPE_I32 ? 4
                         : v->dtype == SPECD_DTYPE_MXFP4                            ? 1
                                                                                    : 2;
  if ((v->offset | static_cast<uint64_t>(v->row_stride)) % align != 0)
    fail(op, where + sdk::dtype_name(v->dtype) + " views must be " + std::to_string(align) +
                 "-byte aligned");
  Mat m;
  m.p = v->buffer->data + v->offset;
  m.rows = v->rows;
  m.cols = v->cols;
  m.stride_bytes = v->row_stride;
  m.dtype = v->dtype;
  return m;
}

void check_range(const specd_buffer* b, uint64_t offset, uint64_t size, const char* op) {
  if (!b) fail(op, "null buffer");
  sdk::check_range(op, offset, size, b->size);
}

bool overlaps(const Mat& a, const Mat& b) {
  if (a.rows == 0 || b.rows == 0) return false;
  const uint8_t* a_end = a.p + (a.rows - 1) * a.stride_bytes + row_bytes(a);
  const uint8_t* b_end = b.p + (b.rows - 1) * b.stride_bytes + row_bytes(b);
  return a.p < b_end && b.p < a_end;
}

}  // namespace specd::gpu
