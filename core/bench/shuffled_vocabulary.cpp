#include "bench/shuffled_vocabulary.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "writers/gguf_writer.hpp"

namespace specd::bench {

void write_shuffled_vocabulary(const std::string& from, const std::string& to, uint64_t seed) {
  const GgufFile file = GgufFile::open(from);
  const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
  if (!tokens) throw Error(from + ": no tokenizer.ggml.tokens to shuffle");
  const size_t n = tokens->array_size();
  std::vector<uint32_t> perm(n);  // new id of each old id
  std::iota(perm.begin(), perm.end(), 0u);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed));
  GgufWriter w;
  for (const auto& [key, value] : file.metadata()) {
    if (key == "general.alignment") continue;
    if (key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.scores" ||
        key == "tokenizer.ggml.token_type") {
      if (value.array_size() != n)
        throw Error(from + ": " + key + " does not have one entry per token");
      const std::vector<GgufValue> old = value.elements();
      std::vector<GgufValue> moved(n);
      for (size_t i = 0; i < n; ++i) moved[perm[i]] = old[i];
      w.set(key, GgufValue::make_array(value.elem_type, moved));
    } else if (key.starts_with("tokenizer.ggml.") && key.ends_with("_token_id")) {
      const std::optional<uint64_t> id = value.as_uint64();
      w.set(key, id && *id < n ? GgufValue::uint32(perm[*id]) : value);
    } else {
      w.set(key, value);
    }
  }
  w.set_alignment(file.alignment());
  for (const GgufTensor& t : file.tensors()) {
    const auto* bytes = static_cast<const uint8_t*>(t.data);
    std::vector<uint8_t> data(bytes, bytes + t.n_bytes);
    if (t.name == "token_embd.weight" || t.name == "output.weight") {
      if (t.n_dims != 2 || static_cast<size_t>(t.ne[1]) < n)
        throw Error(from + ": " + t.name + " does not have a row per token");
      const size_t row = t.n_bytes / static_cast<size_t>(t.ne[1]);
      for (size_t i = 0; i < n; ++i)
        std::copy_n(bytes + i * row, row,
                    data.begin() + static_cast<std::ptrdiff_t>(perm[i] * row));
    }
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                 std::move(data));
  }
  w.write(to);
}

}  // namespace specd::bench
