// Tokenizer encode/decode on any bytes, with the shipped model's byte-level BPE vocabulary
// (models/target.gguf; a random-weight fixture when it is absent). Byte-level BPE covers
// every byte string, so decoding what was encoded must give the text back exactly, with
// and without parsing special-token text; ids must lie in the vocabulary.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "gguf/gguf_reader.hpp"
#include "random_llama.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

struct Loaded {
  std::unique_ptr<specd::GgufFile> file;
  std::unique_ptr<specd::Tokenizer> tokenizer;
};

const Loaded& loaded() {
  static Loaded l = [] {
    std::string path = SPECD_SOURCE_DIR "/models/target.gguf";
    if (const char* env = std::getenv("SPECD_FUZZ_TOKENIZER_GGUF")) path = env;
    if (access(path.c_str(), R_OK) != 0) {
      path = specd::test::temp_dir("fuzz-tokenizer") + "/random.gguf";
      specd::test::write_random_llama(path, {});
    }
    Loaded out;
    out.file = std::make_unique<specd::GgufFile>(specd::GgufFile::open(path));
    out.tokenizer = std::make_unique<specd::Tokenizer>(specd::Tokenizer::from_gguf(*out.file));
    return out;
  }();
  return l;
}

void check_ids(const std::vector<int32_t>& ids, int32_t n) {
  for (int32_t id : ids)
    if (id < 0 || id >= n) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const specd::Tokenizer& t = *loaded().tokenizer;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool byte_level = t.model() == specd::TokenizerModel::kBpe;

  std::vector<int32_t> plain = t.encode(text, /*add_special=*/false, /*parse_special=*/false);
  check_ids(plain, t.n_tokens());
  if (byte_level && t.decode(plain) != text) std::abort();

  std::vector<int32_t> special = t.encode(text, /*add_special=*/true, /*parse_special=*/true);
  check_ids(special, t.n_tokens());
  std::vector<int32_t> body(special.begin() + (t.add_bos() && !special.empty() ? 1 : 0),
                            special.end());
  if (byte_level && !t.add_eos() && t.decode(body, /*render_special=*/true) != text) std::abort();

  // Streaming-style use: every prefix of the ids decodes without trouble.
  for (size_t n = 0; n <= plain.size() && n < 64; ++n)
    (void)t.decode(std::span<const int32_t>(plain.data(), n));
  return 0;
}
