#include "random_llama.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <vector>

#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

namespace specd::test {

namespace {

// The directories temp_dir made, removed when the test process exits (kept when
// SPECD_TEST_KEEP_TEMP is set, to look at a failure's files).
struct TempDirs {
  std::mutex mutex;
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    if (std::getenv("SPECD_TEST_KEEP_TEMP")) return;
    for (const auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
TempDirs& temp_dirs() {
  static TempDirs t;
  return t;
}

}  // namespace

std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("specd-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  TempDirs& t = temp_dirs();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (std::find(t.dirs.begin(), t.dirs.end(), dir) == t.dirs.end()) t.dirs.push_back(dir);
  return dir.string();
}

uint32_t write_random_llama(const std::string& path, const RandomLlamaSpec& s) {
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, s.weight_scale);
  LlamaLayout layout = s;
  if (layout.name.empty()) layout.name = "random-llama-" + std::to_string(s.seed);
  GgufWriter w;
  set_llama_metadata(w, layout);
  w.set_u32("general.file_type", 1);
  set_byte_tokenizer(w, layout.vocab);
  for (const LlamaTensor& t : llama_tensors(layout)) {
    size_t n = 1;
    for (int64_t e : t.ne) n *= static_cast<size_t>(e);
    std::vector<float> v(n);
    using R = LlamaTensorRole;
    const bool norm = t.role == R::kNorm;
    const bool vec = norm || t.role == R::kBias || t.role == R::kSinks || t.role == R::kDecayBias ||
                     t.role == R::kDecay;
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    if (t.role == R::kRopeFactors) {
      v = sample_rope_factors(static_cast<int64_t>(n));
    } else if (t.role == R::kConv) {  // convolution taps in [-0.5, 0.5)
      for (float& x : v) x = unit(rng) - 0.5f;
    } else if (t.role == R::kDecayBias) {  // softplus^-1 of step sizes in [0.001, 0.1)
      for (float& x : v) x = std::log(std::expm1(0.001f + 0.099f * unit(rng)));
    } else if (t.role == R::kDecay) {  // -exp(A_log), A in [1, 16)
      for (float& x : v) x = -(1.0f + 15.0f * unit(rng));
    } else {
      for (float& x : v) x = (norm ? 1.0f : 0.0f) + normal(rng);
    }
    const bool f32 = vec || t.role == R::kRopeFactors || t.role == R::kConv || t.role == R::kRouter;
    w.add_tensor_f32(t.name, f32 ? GgmlType::kF32 : s.weight_type, t.ne, v.data());
  }
  w.write(path);
  return layout.vocab;
}

}  // namespace specd::test
