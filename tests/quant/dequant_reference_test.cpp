// Dequantization of every ggml type specd reads equals llama.cpp's own (gguf-py quants.py),
// bit for bit: the reference rows of ../shared/compat/quant/dequant and the sha256 over all
// rows of each tensor listed in its manifest.json. Checked for the core row decoder (which
// the CPU backend's panels use) and for the per-element accessor the GPU kernels use.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "compat_dir.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/heads/sha256.hpp"
#include "specd/cpp/ggml_blocks.hpp"

using namespace specd;

namespace {

struct ManifestEntry {
  std::string file, tensor, type, reference, sha256;
  int64_t rows_in_reference = 0;
};

// The string or number value after `"key":` starting the search at `from`.
std::string json_field(const std::string& s, const std::string& key, size_t from, size_t to) {
  const size_t k = s.find("\"" + key + "\"", from);
  REQUIRE_MESSAGE((k != std::string::npos && k < to), "manifest.json: no " << key);
  size_t v = s.find(':', k) + 1;
  while (s[v] == ' ') ++v;
  if (s[v] == '"') return s.substr(v + 1, s.find('"', v + 1) - v - 1);
  size_t e = v;
  while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
  return s.substr(v, e - v);
}

std::vector<ManifestEntry> read_manifest(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<ManifestEntry> out;
  for (size_t at = s.find("{", s.find("\"tensors\"")); at != std::string::npos;
       at = s.find("{", at + 1)) {
    const size_t end = s.find("}", at);
    ManifestEntry e;
    e.file = json_field(s, "file", at, end);
    e.tensor = json_field(s, "tensor", at, end);
    e.type = json_field(s, "ggml_type", at, end);
    e.reference = json_field(s, "reference_f32", at, end);
    e.sha256 = json_field(s, "sha256_all_rows_f32", at, end);
    e.rows_in_reference = std::stoll(json_field(s, "rows_in_reference", at, end));
    out.push_back(e);
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

bool same_bits(const float* a, const float* b, size_t n, size_t* first_diff) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, 4) != 0) {
      *first_diff = i;
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("dequantization equals llama.cpp's for every type in the reference set" *
          SPECD_MAY_SKIP) {
  if (!test::have_quant_compat()) return;
  const std::string dir = test::quant_compat_dir();
  const auto entries = read_manifest(dir + "/dequant/manifest.json");
  CHECK(entries.size() >= 13);
  std::vector<std::string> seen;
  for (const ManifestEntry& e : entries) {
    CAPTURE(e.file);
    CAPTURE(e.tensor);
    CAPTURE(e.type);
    const GgufFile f = GgufFile::open(dir + "/" + e.file);
    const GgufTensor& t = f.require_tensor(e.tensor);
    REQUIRE(lower(ggml_type_name(t.type)) == lower(e.type));
    seen.push_back(lower(e.type));
    const int64_t cols = t.ne[0], rows = t.n_elements / cols;
    const size_t row_bytes = ggml_row_size(t.type, cols);
    std::vector<float> all(static_cast<size_t>(t.n_elements));
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * row_bytes,
                     all.data() + r * cols, cols);

    std::ifstream ref_in(dir + "/" + e.reference, std::ios::binary);
    REQUIRE(ref_in.good());
    std::vector<float> ref(static_cast<size_t>(e.rows_in_reference * cols));
    ref_in.read(reinterpret_cast<char*>(ref.data()), static_cast<std::streamsize>(ref.size() * 4));
    REQUIRE(ref_in.gcount() == static_cast<std::streamsize>(ref.size() * 4));
    size_t diff = 0;
    const bool rows_equal = same_bits(all.data(), ref.data(), ref.size(), &diff);
    CHECK_MESSAGE(rows_equal, "element " << diff << ": " << all[diff] << " vs " << ref[diff]);
    CHECK(sha256_hex(all.data(), all.size() * 4) == e.sha256);

    // The GPU kernels' per-element accessor gives the same bits.
    const auto* first = static_cast<const uint8_t*>(t.data);
    std::vector<float> el(ref.size());
    const bool known = ggml::visit_type(static_cast<uint32_t>(t.type), [&](auto tag) {
      for (int64_t r = 0; r < e.rows_in_reference; ++r)
        for (int64_t c = 0; c < cols; ++c)
          el[r * cols + c] = ggml::element<decltype(tag)::value>(first + r * row_bytes, c);
    });
    REQUIRE(known);
    const bool elements_equal = same_bits(el.data(), ref.data(), ref.size(), &diff);
    CHECK_MESSAGE(elements_equal, "element " << diff << ": " << el[diff] << " vs " << ref[diff]);
  }
  for (const char* want : {"f16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k",
                           "q5_k", "q6_k", "iq4_nl", "iq4_xs"}) {
    CAPTURE(want);
    CHECK(std::find(seen.begin(), seen.end(), std::string(want)) != seen.end());
  }
}

TEST_CASE("iq4 levels are llama.cpp's kvalues") {
  const int want[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (unsigned q = 0; q < 16; ++q) CHECK(ggml::iq4_level(q) == want[q]);
}
