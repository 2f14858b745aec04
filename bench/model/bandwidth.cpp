#include "bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "gguf/gguf_reader.hpp"

namespace specd::bench {

uint64_t decode_weight_bytes(const std::string& gguf_path) {
  const GgufFile f = GgufFile::open(gguf_path);
  const bool tied = f.tensor("output.weight") == nullptr;
  uint64_t bytes = 0;
  for (const GgufTensor& t : f.tensors())
    if (t.n_dims == 2 && (t.name != "token_embd.weight" || tied)) bytes += t.n_bytes;
  return bytes;
}

double copy_bandwidth() {
  const size_t n = size_t{256} << 20;
  std::vector<char> src(n, 1), dst(n, 0);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    src[r] = dst[n - 1 - r];  // keep the copies observable
  }
  return 2.0 * double(n) / best;
}

}  // namespace specd::bench
