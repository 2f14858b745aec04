#include "gguf_rewrite.hpp"

#include <cstdint>
#include <vector>

namespace specd::test {

void rewrite_gguf(const std::string& from, const std::string& to,
                  const std::function<void(const GgufFile&, GgufWriter&)>& edit) {
  const GgufFile file = GgufFile::open(from);
  GgufWriter w;
  for (const auto& [key, value] : file.metadata())
    if (key != "general.alignment") w.set(key, value);
  w.set_alignment(file.alignment());
  for (const GgufTensor& t : file.tensors()) {
    const auto* bytes = static_cast<const uint8_t*>(t.data);
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                 std::vector<uint8_t>(bytes, bytes + t.n_bytes));
  }
  edit(file, w);
  w.write(to);
}

}  // namespace specd::test
