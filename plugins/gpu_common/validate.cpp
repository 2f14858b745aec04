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
  const std::string where = std::string(arg) + ": ";
  if (!v) fail(op, where + "missing view");
  if (v->struct_size < sizeof(specd_view)) fail(op, where + "struct_size too small");
  if (!v->buffer) fail(op, where + "null buffer");
  bool ok = false;
  std::string allowed;
  for (specd_dtype d : dtypes) {
    ok = ok || d == v->dtype;
    allowed += std::string(allowed.empty() ? "" : "/") + sdk::dtype_name(d);
  }
  if (!ok)
    throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED, std::string(op) + ": " + where + "dtype " +
                                                         sdk::dtype_name(v->dtype) + " (" +
                                                         std::to_string(v->dtype) +
                                                         ") not supported, expected " + allowed);
  if (v->rows < 0 || v->cols < 1) fail(op, where + "bad shape");
  const uint64_t rb = sdk::dtype_row_bytes(v->dtype, v->cols);
  if (rb == 0) fail(op, where + "cols must be a multiple of 32 for q8_0");
  if (v->row_stride < static_cast<int64_t>(rb))
    fail(op, where + "row_stride " + std::to_string(v->row_stride) + " < row size " +
                 std::to_string(rb));
  const uint64_t extent =
      v->rows == 0 ? 0 : static_cast<uint64_t>(v->rows - 1) * v->row_stride + rb;
  if (v->offset > v->buffer->size || extent > v->buffer->size - v->offset)
    fail(op, where + "view [" + std::to_string(v->rows) + ", " + std::to_string(v->cols) +
                 "] at offset " + std::to_string(v->offset) + " exceeds its buffer of " +
                 std::to_string(v->buffer->size) + " bytes");
  // Kernels load f32/i32 as 4-byte words and f16/bf16/q8_0 scales as 2-byte words; device
  // memory faults on misaligned loads, so refuse them here (buffers are 256-byte aligned).
  const uint64_t align = (v->dtype == SPECD_DTYPE_F32 || v->dtype == SPECD_DTYPE_I32) ? 4 : 2;
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

void same_shape(const Mat& a, const Mat& b, const char* op, const char* an, const char* bn) {
  if (a.rows != b.rows || a.cols != b.cols)
    fail(op, std::string(bn) + " is [" + std::to_string(b.rows) + ", " + std::to_string(b.cols) +
                 "] but " + an + " is [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) +
                 "]");
}

void check_range(const specd_buffer* b, uint64_t offset, uint64_t size, const char* op) {
  if (!b) fail(op, "null buffer");
  if (offset > b->size || size > b->size - offset)
    fail(op, "range [" + std::to_string(offset) + ", +" + std::to_string(size) +
                 ") outside a buffer of " + std::to_string(b->size) + " bytes");
}

bool overlaps(const Mat& a, const Mat& b) {
  if (a.rows == 0 || b.rows == 0) return false;
  const uint8_t* a_end = a.p + (a.rows - 1) * a.stride_bytes + row_bytes(a);
  const uint8_t* b_end = b.p + (b.rows - 1) * b.stride_bytes + row_bytes(b);
  return a.p < b_end && b.p < a_end;
}

}  // namespace specd::gpu
