// Parsed metadata stays about the size of the file: arrays are packed, not one value per
// element, and a file whose metadata would still expand (nested arrays, a flood of tiny
// keys) is refused instead of exhausting memory.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "gguf_test_util.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

size_t file_size(const std::string& path) {
  return std::filesystem::file_size(path);
}

std::string open_error(const std::string& path) {
  try {
    GgufFile::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("large metadata arrays hold about the bytes the file spends on them") {
  constexpr size_t n = 1 << 20;
  GgufWriter w;
  w.set("a.u8", GgufValue::make_array(GgufType::kUint8, {}));
  {
    GgufValue u8 = GgufValue::empty_array(GgufType::kUint8);
    std::vector<uint8_t> bytes(n);
    for (size_t k = 0; k < n; ++k) bytes[k] = static_cast<uint8_t>(k * 7);
    u8.append_packed(bytes.data(), bytes.size());
    w.set("a.u8", u8);
  }
  std::vector<float> floats(n / 4);
  for (size_t k = 0; k < floats.size(); ++k) floats[k] = 0.5f * static_cast<float>(k);
  w.set("a.f32", GgufValue::float32_array(floats));
  std::vector<std::string> strings(n / 16);
  for (size_t k = 0; k < strings.size(); ++k) strings[k] = "tok" + std::to_string(k);
  w.set("a.str", GgufValue::string_array(strings));
  {
    GgufValue b = GgufValue::empty_array(GgufType::kBool);
    const std::vector<uint8_t> bits = {0, 1, 1};
    b.append_packed(bits.data(), bits.size());
    w.set("a.bool", b);
  }
  const std::string path = test::scratch_path("big_arrays.gguf");
  w.write(path);

  const GgufFile f = GgufFile::open(path);
  INFO("file " << file_size(path) << " bytes, parsed metadata " << f.held_bytes() << " bytes");
  // One GgufValue per element would be about 100 times the file.
  CHECK(f.held_bytes() < 2 * file_size(path));
  const GgufValue& u8 = f.get_array("a.u8", GgufType::kUint8);
  REQUIRE(u8.array_size() == n);
  CHECK(u8.uint_at(12345) == static_cast<uint8_t>(12345 * 7));
  CHECK(u8.int_at(3) == 21);
  CHECK_THROWS_AS(u8.uint_at(n), Error);
  CHECK_THROWS_AS(u8.float_at(0), Error);
  CHECK_THROWS_AS(u8.string_at(0), Error);
  const GgufValue& f32 = f.get_array("a.f32", GgufType::kFloat32);
  REQUIRE(f32.array_size() == floats.size());
  CHECK(f32.float_at(1001) == 500.5);
  const GgufValue& str = f.get_array("a.str", GgufType::kString);
  REQUIRE(str.array_size() == strings.size());
  CHECK(str.string_at(0) == "tok0");
  CHECK(str.string_at(strings.size() - 1) == strings.back());
  CHECK(str.element(7) == GgufValue::string("tok7"));
  const GgufValue& b = f.get_array("a.bool", GgufType::kBool);
  CHECK(b.elements() == std::vector<GgufValue>{GgufValue::boolean(false), GgufValue::boolean(true),
                                               GgufValue::boolean(true)});
}

TEST_CASE("metadata that would expand far beyond the file is refused, naming it") {
  {
    // 200,000 nested empty arrays: 12 bytes each on disk, a whole value each in memory.
    test::RawGguf r;
    const std::string key = "deep";
    r.header(0, 1);
    r.str(key);
    r.put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(200000);
    for (int k = 0; k < 200000; ++k) r.put<uint32_t>(0).put<uint64_t>(0);
    const std::string path = test::scratch_path("nested_bomb.gguf");
    test::write_bytes(path, r.b);
    const std::string e = open_error(path);
    CHECK(e.find(path) != std::string::npos);
    CHECK(e.find("key 'deep'") != std::string::npos);
    CHECK(e.find("4 times the file size") != std::string::npos);
  }
  {
    // 300,000 one-byte keys: the entries and their index outgrow the file.
    test::RawGguf r;
    r.header(0, 300000);
    for (int k = 0; k < 300000; ++k) r.str(std::to_string(k)).put<uint32_t>(0).put<uint8_t>(1);
    const std::string path = test::scratch_path("key_flood.gguf");
    test::write_bytes(path, r.b);
    const std::string e = open_error(path);
    CHECK(e.find(path) != std::string::npos);
    CHECK(e.find("4 times the file size") != std::string::npos);
  }
}
