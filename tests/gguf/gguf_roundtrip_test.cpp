#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "gguf_test_util.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

GgufValue nested_array() {
  std::vector<GgufValue> inner1 = {GgufValue::int16(-3), GgufValue::int16(7)};
  std::vector<GgufValue> inner2 = {};
  std::vector<GgufValue> outer = {GgufValue::make_array(GgufType::kInt16, inner1),
                                  GgufValue::make_array(GgufType::kInt16, inner2)};
  return GgufValue::make_array(GgufType::kArray, outer);
}

std::vector<std::pair<std::string, GgufValue>> every_type() {
  return {
      {"t.u8", GgufValue::uint8(255)},
      {"t.i8", GgufValue::int8(-128)},
      {"t.u16", GgufValue::uint16(65535)},
      {"t.i16", GgufValue::int16(-32768)},
      {"t.u32", GgufValue::uint32(4000000000u)},
      {"t.i32", GgufValue::int32(-2000000000)},
      {"t.u64", GgufValue::uint64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", GgufValue::int64(std::numeric_limits<int64_t>::min())},
      {"t.f32", GgufValue::float32(1.5f)},
      {"t.f64", GgufValue::float64(-2.25e300)},
      {"t.bool", GgufValue::boolean(true)},
      {"t.str", GgufValue::string(std::string("h\xc3\xa9llo\0x", 8))},
      {"t.empty", GgufValue::string("")},
      {"t.arr_str", GgufValue::string_array({"a", "", "\xe2\x96\x81x"})},
      {"t.arr_f32", GgufValue::float32_array({0.f, -1.f, 3.25f})},
      {"t.arr_i32", GgufValue::int32_array({1, -2, 3})},
      {"t.arr_bool", GgufValue::make_array(GgufType::kBool, {GgufValue::boolean(false)})},
      {"t.arr_u64", GgufValue::make_array(GgufType::kUint64, {GgufValue::uint64(1ull << 40)})},
      {"t.arr_f64", GgufValue::make_array(GgufType::kFloat64, {GgufValue::float64(0.1)})},
      {"t.arr_empty", GgufValue::make_array(GgufType::kUint8, {})},
      {"t.nested", nested_array()},
  };
}

}  // namespace

TEST_CASE("gguf metadata of every type round trips") {
  GgufWriter w;
  const auto kvs = every_type();
  for (const auto& [k, v] : kvs) w.set(k, v);
  const std::string path = test::scratch_path("meta.gguf");
  w.write(path);

  const GgufFile f = GgufFile::open(path);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  REQUIRE(f.metadata().size() == kvs.size());
  for (size_t k = 0; k < kvs.size(); ++k) {
    CHECK(f.metadata()[k].first == kvs[k].first);
    CHECK(f.metadata()[k].second == kvs[k].second);
    REQUIRE(f.find(kvs[k].first) != nullptr);
  }
  CHECK(f.find("missing") == nullptr);
  CHECK(f.tensors().empty());

  CHECK(f.get_u32("t.u8") == 255);
  CHECK(f.get_i32("t.i8") == -128);
  CHECK(f.get_u32("t.u32") == 4000000000u);
  CHECK(f.get_u64("t.u64") == std::numeric_limits<uint64_t>::max());
  CHECK(f.get_i64("t.i64") == std::numeric_limits<int64_t>::min());
  CHECK(f.get_i64("t.u32") == 4000000000ll);
  CHECK(f.get_f32("t.f32") == 1.5f);
  CHECK(f.get_f64("t.f64") == -2.25e300);
  CHECK(f.get_bool("t.bool"));
  CHECK(f.get_string("t.str") == std::string("h\xc3\xa9llo\0x", 8));
  CHECK(f.get_array("t.arr_str", GgufType::kString).array_size() == 3);
  CHECK(f.get_array("t.nested").nested_at(0).int_at(1) == 7);
  CHECK(!f.get_u32_opt("nope").has_value());
  CHECK(f.get_u32_opt("t.u16") == 65535u);
  CHECK(f.get_array_opt("nope", GgufType::kString) == nullptr);
}

TEST_CASE("gguf typed getters give errors naming path, key and types") {
  GgufWriter w;
  w.set_string("llama.block_count", "twelve");
  w.set_i32("neg", -1);
  w.set_u64("big", 1ull << 40);
  w.set("arr", GgufValue::int32_array({1}));
  const std::string path = test::scratch_path("typed.gguf");
  w.write(path);
  const GgufFile f = GgufFile::open(path);

  CHECK_THROWS_WITH_AS(
      f.get_u32("llama.block_count"),
      (path + ": key 'llama.block_count' has type string, expected uint32").c_str(), Error);
  CHECK_THROWS_WITH_AS(f.get_u32("neg"),
                       (path + ": key 'neg' value -1 does not fit in uint32").c_str(), Error);
  CHECK_THROWS_WITH_AS(f.get_u32("big"),
                       (path + ": key 'big' value 1099511627776 does not fit in uint32").c_str(),
                       Error);
  CHECK(f.get_i32("neg") == -1);
  CHECK_THROWS_AS(f.get_u64("neg"), Error);
  CHECK_THROWS_WITH_AS(f.get_string("missing"), (path + ": missing metadata key 'missing'").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(f.get_array("arr", GgufType::kString),
                       (path + ": key 'arr' has type array[int32], expected array[string]").c_str(),
                       Error);
  CHECK_THROWS_AS(f.get_u32_opt("llama.block_count"), Error);
  CHECK_THROWS_AS(f.get_f32("neg"), Error);
  CHECK_THROWS_AS(f.get_bool("neg"), Error);
  CHECK_THROWS_WITH_AS(f.require_tensor("x"), (path + ": missing tensor 'x'").c_str(), Error);
}

namespace {

// The first `count` values of a 16-bit float tensor, decoded by `to_f32`, are those of
// `want` within a relative `epsilon`.
void check_16_bit_values(const GgufTensor& t, int count, float (*to_f32)(uint16_t),
                         const std::vector<float>& want, double epsilon) {
  for (int k = 0; k < count; ++k) {
    uint16_t h;
    std::memcpy(&h, static_cast<const uint8_t*>(t.data) + 2 * k, 2);
    CHECK(to_f32(h) == doctest::Approx(want[k]).epsilon(epsilon));
  }
}

}  // namespace

TEST_CASE("gguf tensors of every writable type round trip at the alignment") {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.f, 2.f);
  std::vector<float> values(64 * 3);
  for (float& v : values) v = dist(rng);

  for (uint32_t alignment : {32u, 64u, 1u, 256u}) {
    CAPTURE(alignment);
    GgufWriter w;
    if (alignment != 32) w.set_alignment(alignment);
    w.set_string("general.architecture", "llama");
    w.add_tensor_f32("a.f32", GgmlType::kF32, {64, 3}, values.data());
    w.add_tensor_f32("b.f16", GgmlType::kF16, {7}, values.data());
    w.add_tensor_f32("c.bf16", GgmlType::kBF16, {2, 3, 5}, values.data());
    w.add_tensor_f32("d.q8_0", GgmlType::kQ8_0, {64, 3}, values.data());
    w.add_tensor("e.q4_0", GgmlType::kQ4_0, {32, 1, 1, 2}, std::vector<uint8_t>(36, 0x11));
    w.add_tensor("f.empty", GgmlType::kF32, {0, 4}, {});
    const std::string path = test::scratch_path("tensors.gguf");
    w.write(path);

    const GgufFile f = GgufFile::open(path);
    CHECK(f.alignment() == alignment);
    CHECK(f.data_offset() % alignment == 0);
    REQUIRE(f.tensors().size() == 6);
    for (const auto& t : f.tensors()) {
      CHECK(t.offset % alignment == 0);
      CHECK(reinterpret_cast<uintptr_t>(t.data) % std::min(alignment, 32u) == 0);
    }

    const GgufTensor& a = f.require_tensor("a.f32");
    CHECK(a.type == GgmlType::kF32);
    CHECK(a.n_dims == 2);
    CHECK(a.ne[0] == 64);
    CHECK(a.ne[1] == 3);
    CHECK(a.ne[2] == 1);
    CHECK(a.n_elements == 192);
    CHECK(a.n_bytes == 192 * 4);
    CHECK(std::memcmp(a.data, values.data(), a.n_bytes) == 0);

    const GgufTensor& b = f.require_tensor("b.f16");
    CHECK(b.n_bytes == 14);
    check_16_bit_values(b, 7, f16_to_f32, values, 1e-3);

    const GgufTensor& c = f.require_tensor("c.bf16");
    CHECK(c.n_dims == 3);
    CHECK(c.n_elements == 30);
    check_16_bit_values(c, 30, bf16_to_f32, values, 1e-2);

    const GgufTensor& d = f.require_tensor("d.q8_0");
    CHECK(d.n_bytes == 6 * 34);
    std::vector<float> back(192);
    dequantize_q8_0(d.data, back.data(), 192);
    for (int k = 0; k < 192; ++k) CHECK(std::fabs(back[k] - values[k]) < 0.05f);

    const GgufTensor& e = f.require_tensor("e.q4_0");
    CHECK(e.n_dims == 4);
    CHECK(e.n_bytes == 36);
    CHECK(static_cast<const uint8_t*>(e.data)[35] == 0x11);

    const GgufTensor& z = f.require_tensor("f.empty");
    CHECK(z.n_elements == 0);
    CHECK(z.n_bytes == 0);
  }
}

TEST_CASE("gguf v2 files are read") {
  test::RawGguf r;
  r.header(1, 1, 2).kv_u32("general.alignment", 32).tensor("t", {4}, 0, 0).pad().zeros(16);
  const std::string path = test::scratch_path("v2.gguf");
  test::write_bytes(path, r.b);
  const GgufFile f = GgufFile::open(path);
  CHECK(f.version() == 2);
  CHECK(f.require_tensor("t").n_bytes == 16);
}

TEST_CASE("gguf writer rejects inconsistent input") {
  GgufWriter w;
  CHECK_THROWS_AS(w.add_tensor("x", GgmlType::kF32, {4}, std::vector<uint8_t>(15)), Error);
  CHECK_THROWS_AS(w.add_tensor("x", GgmlType::kQ8_0, {31}, std::vector<uint8_t>(34)), Error);
  CHECK_THROWS_AS(w.add_tensor("x", GgmlType::kF32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)),
                  Error);
  w.add_tensor("x", GgmlType::kF32, {1}, std::vector<uint8_t>(4));
  CHECK_THROWS_AS(w.add_tensor("x", GgmlType::kF32, {1}, std::vector<uint8_t>(4)), Error);
  CHECK_THROWS_AS(w.set_alignment(24), Error);
  // An array cannot even be built with an element of another type.
  CHECK_THROWS_AS(GgufValue::make_array(GgufType::kInt32, {GgufValue::string("s")}), Error);
}

TEST_CASE("gguf metadata-only file without trailing padding opens") {
  test::RawGguf r;
  r.header(0, 1).kv_u32("a", 7);
  const std::string path = test::scratch_path("meta_only.gguf");
  test::write_bytes(path, r.b);
  const GgufFile f = GgufFile::open(path);
  CHECK(f.get_u32("a") == 7);
  CHECK(f.tensors().empty());
}
