// Broken GGUF files: every one must be refused with a specd::Error that names the file.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "gguf_test_util.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

// Opens bytes written to a scratch file and expects an Error containing the path and `what`.
void expect_error(const std::vector<uint8_t>& bytes, const std::string& what) {
  const std::string path = test::scratch_path("bad.gguf");
  test::write_bytes(path, bytes);
  try {
    GgufFile::open(path);
    FAIL("opened a broken file; expected an error mentioning: " << what);
  } catch (const Error& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.rfind(path + ": ", 0) == 0);
    CHECK(msg.find(what) != std::string::npos);
  }
}

std::vector<uint8_t> valid_file() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"a", "bc", "def"}));
  w.set("nested", GgufValue::make_array(
                      GgufType::kArray,
                      {GgufValue::make_array(GgufType::kFloat32, {GgufValue::float32(1.0f)})}));
  w.set_bool("flag", true);
  const std::vector<float> v(64, 0.5f);
  w.add_tensor_f32("w0", GgmlType::kF32, {8, 2}, v.data());
  w.add_tensor_f32("w1", GgmlType::kQ8_0, {32, 2}, v.data());
  return w.serialize();
}

// A header and one tensor description, data section padded after it.
test::RawGguf one_tensor(std::vector<int64_t> ne, uint32_t type, uint64_t offset,
                         size_t data_bytes) {
  test::RawGguf r;
  r.header(1, 0).tensor("t", std::move(ne), type, offset).pad().zeros(data_bytes);
  return r;
}

// A header announcing one metadata pair and its key "k"; the caller writes the rest.
test::RawGguf key_k() {
  test::RawGguf r;
  r.header(0, 1).str("k");
  return r;
}

}  // namespace

TEST_CASE("gguf valid fixture opens") {
  const std::string path = test::scratch_path("valid.gguf");
  test::write_bytes(path, valid_file());
  const GgufFile f = GgufFile::open(path);
  CHECK(f.tensors().size() == 2);
}

TEST_CASE("gguf truncation at every prefix length is an error") {
  const std::vector<uint8_t> full = valid_file();
  const std::string path = test::scratch_path("valid.gguf");
  test::write_bytes(path, full);
  const GgufFile f = GgufFile::open(path);
  size_t data_end = 0;
  for (const auto& t : f.tensors()) {
    data_end = std::max<size_t>(data_end, f.data_offset() + t.offset + t.n_bytes);
  }
  for (size_t n = 0; n < full.size(); ++n) {
    CAPTURE(n);
    const std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<long>(n));
    if (n < data_end) {
      expect_error(prefix, "");
    } else {
      // Only trailing padding was cut.
      const std::string p = test::scratch_path("prefix.gguf");
      test::write_bytes(p, prefix);
      CHECK_NOTHROW(GgufFile::open(p));
    }
  }
}

TEST_CASE("gguf random corruption never crashes") {
  const std::vector<uint8_t> full = valid_file();
  std::mt19937 rng(1234);
  const std::string path = test::scratch_path("fuzz.gguf");
  int refused = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint8_t> b = full;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0:
          b[at] = static_cast<uint8_t>(rng());
          break;
        case 1:
          b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        default:
          b[at] = 0xff;
          break;
      }
    }
    test::write_bytes(path, b);
    try {
      GgufFile::open(path);
    } catch (const Error& e) {
      ++refused;
      const std::string msg = e.what();
      if (msg.rfind(path + ": ", 0) != 0) FAIL("error without path: " << msg);
    }
  }
  CHECK(refused > 0);
}

TEST_CASE("gguf missing, empty and non-regular files") {
  expect_error({}, "too small");
  CHECK_THROWS_WITH_AS(GgufFile::open("/nonexistent/specd.gguf"),
                       doctest::Contains("/nonexistent/specd.gguf: cannot open"), Error);
  const std::string dir = std::filesystem::path(test::scratch_path("x")).parent_path().string();
  CHECK_THROWS_WITH_AS(GgufFile::open(dir), doctest::Contains((dir + ": ").c_str()), Error);
}

TEST_CASE("gguf bad header") {
  std::vector<uint8_t> b = valid_file();
  b[0] = 'X';
  expect_error(b, "bad magic");
  for (uint32_t version : {0u, 1u, 4u, 0xffffffffu}) {
    test::RawGguf r;
    r.header(0, 0, version);
    expect_error(r.b, "unsupported GGUF version " + std::to_string(version));
  }
  test::RawGguf huge_kv;
  huge_kv.header(0, 1ull << 60);
  expect_error(huge_kv.b, "metadata count 1152921504606846976 cannot fit");
  test::RawGguf huge_tensors;
  huge_tensors.header(~0ull, 0);
  expect_error(huge_tensors.b, "tensor count");
}

TEST_CASE("gguf bad metadata") {
  SUBCASE("key length beyond the file") {
    test::RawGguf r;
    r.header(0, 1).put<uint64_t>(1ull << 62).zeros(8);
    expect_error(r.b, "metadata key length 4611686018427387904");
  }
  SUBCASE("string value length beyond the file") {
    expect_error(key_k().put<uint32_t>(8).put<uint64_t>(~0ull).zeros(8).b, "string value length");
  }
  SUBCASE("unknown value type") {
    expect_error(key_k().put<uint32_t>(13).zeros(8).b, "key 'k' has unknown value type 13");
  }
  SUBCASE("unknown array element type") {
    expect_error(key_k().put<uint32_t>(9).put<uint32_t>(99).put<uint64_t>(1).zeros(8).b,
                 "unknown value type 99");
  }
  SUBCASE("array length beyond the file") {
    expect_error(key_k().put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1ull << 40).zeros(64).b,
                 "key 'k' array count 1099511627776 cannot fit");
  }
  SUBCASE("string array length beyond the file") {
    expect_error(key_k().put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(100).zeros(64).b,
                 "array count 100 cannot fit");
  }
  SUBCASE("arrays nested too deep") {
    test::RawGguf r;
    r.header(0, 1).str("k").put<uint32_t>(9);
    for (int d = 0; d < 20; ++d) r.put<uint32_t>(9).put<uint64_t>(1);
    r.zeros(64);
    expect_error(r.b, "nests arrays deeper than");
  }
  SUBCASE("bool out of range") {
    expect_error(key_k().put<uint32_t>(7).put<uint8_t>(2).zeros(8).b, "key 'k' has bool value 2");
  }
  SUBCASE("duplicate key") {
    test::RawGguf r;
    r.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
    expect_error(r.b, "duplicate metadata key 'k'");
  }
  SUBCASE("alignment of the wrong type") {
    test::RawGguf r;
    r.header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32);
    expect_error(r.b, "general.alignment has type uint64, expected uint32");
  }
  SUBCASE("alignment not a power of two") {
    for (uint32_t a : {0u, 3u, 48u}) {
      test::RawGguf r;
      r.header(0, 1).kv_u32("general.alignment", a);
      expect_error(r.b, "general.alignment = " + std::to_string(a) + " is not a power of two");
    }
  }
}

TEST_CASE("gguf bad tensor descriptions") {
  SUBCASE("unknown ggml type") {
    expect_error(one_tensor({4}, 4, 0, 64).b, "tensor 't' has unknown ggml type 4");
    expect_error(one_tensor({4}, 31, 0, 64).b, "unknown ggml type 31");
    expect_error(one_tensor({4}, 0xffffffffu, 0, 64).b, "unknown ggml type 4294967295");
  }
  SUBCASE("n_dims out of range") {
    expect_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 64).b, "tensor 't' has n_dims 5");
    expect_error(one_tensor({}, 0, 0, 64).b, "tensor 't' has n_dims 0");
    test::RawGguf r;
    r.header(1, 0).str("t").put<uint32_t>(0xffffffffu).zeros(64);
    expect_error(r.b, "n_dims 4294967295");
  }
  SUBCASE("negative dimension") {
    expect_error(one_tensor({4, -1}, 0, 0, 64).b, "negative ne[1]");
  }
  SUBCASE("element count overflow") {
    expect_error(one_tensor({1ll << 40, 1ll << 40}, 0, 0, 64).b, "element count overflows");
    expect_error(one_tensor({1ll << 62, 2, 2}, 0, 0, 64).b, "element count overflows");
  }
  SUBCASE("byte size overflow or beyond the file") {
    expect_error(one_tensor({1ll << 62}, 28, 0, 64).b, "tensor 't'");
    expect_error(one_tensor({1ll << 40}, 0, 0, 64).b, "lies outside the data section");
  }
  SUBCASE("row not a whole number of blocks") {
    expect_error(one_tensor({31}, 8, 0, 64).b,
                 "ne[0] = 31 is not a multiple of the q8_0 block size 32");
  }
  SUBCASE("misaligned offset") {
    expect_error(one_tensor({4}, 0, 16, 64).b, "offset 16 is not a multiple of the alignment 32");
  }
  SUBCASE("data out of range") {
    expect_error(one_tensor({4}, 0, 64, 64).b, "tensor 't' (f32) data [64, +16) lies outside");
    expect_error(one_tensor({32}, 0, 0, 64).b, "lies outside");
    expect_error(one_tensor({4}, 0, 0xffffffffffffffe0ull, 64).b, "lies outside");
    test::RawGguf r;
    r.header(1, 0).tensor("t", {4}, 0, 0);  // no data section at all
    expect_error(r.b, "data section would start");
  }
  SUBCASE("overlapping tensors") {
    test::RawGguf r;
    r.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(128);
    expect_error(r.b, "tensors 'a' and 'b' overlap");
  }
  SUBCASE("duplicate tensor names") {
    test::RawGguf r;
    r.header(2, 0).tensor("a", {4}, 0, 0).tensor("a", {4}, 0, 32).pad().zeros(64);
    expect_error(r.b, "duplicate tensor 'a'");
  }
  SUBCASE("tensor name beyond the file") {
    test::RawGguf r;
    r.header(1, 0).put<uint64_t>(1ull << 50).zeros(64);
    expect_error(r.b, "tensor name length");
  }
}
