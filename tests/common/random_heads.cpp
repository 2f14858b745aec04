#include "random_heads.hpp"

#include <random>
#include <vector>

#include "gguf/gguf_reader.hpp"
#include "models/heads/target_binding.hpp"
#include "writers/gguf_writer.hpp"

namespace specd::test {
namespace {

struct Writer {
  GgufWriter w;
  std::mt19937_64 rng;
  std::normal_distribution<float> normal;
  uint32_t d = 0, vocab = 0;

  Writer(const std::string& arch, const std::string& target_path, const RandomHeadSpec& s)
      : rng(s.seed), normal(0.0f, s.weight_scale) {
    GgufFile target = GgufFile::open(target_path);
    const GgufTensor& embd = target.require_tensor("token_embd.weight");
    d = static_cast<uint32_t>(embd.ne[0]);
    vocab = static_cast<uint32_t>(embd.ne[1]);
    TargetIdentity id = target_identity(target);
    w.set_string("general.architecture", arch);
    w.set_string("general.name", arch + "-random-" + std::to_string(s.seed));
    w.set_u32("general.file_type", 1);
    w.set_string("specd.target.name", s.bind_name.empty() ? id.name : s.bind_name);
    w.set_string("specd.target.digest", s.bind_digest.empty() ? id.digest : s.bind_digest);
  }
  void matrix(const std::string& name, uint32_t in, uint32_t out) {
    std::vector<float> v(static_cast<size_t>(in) * out);
    for (float& x : v) x = normal(rng);
    w.add_tensor_f32(name, GgmlType::kF16, {in, out}, v.data());
  }
  void vector(const std::string& name, uint32_t n, float base) {
    std::vector<float> v(n);
    for (float& x : v) x = base + normal(rng);
    w.add_tensor_f32(name, GgmlType::kF32, {n}, v.data());
  }
  // Metadata and one decoder block under `prefix` (FORMATS.md section 5 keys).
  void block(const std::string& arch, const std::string& prefix, const RandomHeadSpec& s) {
    const std::string a = arch + ".";
    const uint32_t hd = d / s.n_head;
    w.set_u32(a + "context_length", 512);
    w.set_u32(a + "embedding_length", d);
    w.set_u32(a + "block_count", 1);
    w.set_u32(a + "feed_forward_length", s.n_ff);
    w.set_u32(a + "attention.head_count", s.n_head);
    w.set_u32(a + "attention.head_count_kv", s.n_head_kv);
    w.set_f32(a + "rope.freq_base", 10000.0f);
    w.set_u32(a + "rope.dimension_count", hd);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32(a + "vocab_size", vocab);
    vector(prefix + "attn_norm.weight", d, 1.0f);
    matrix(prefix + "attn_q.weight", d, s.n_head * hd);
    matrix(prefix + "attn_k.weight", d, s.n_head_kv * hd);
    matrix(prefix + "attn_v.weight", d, s.n_head_kv * hd);
    matrix(prefix + "attn_output.weight", s.n_head * hd, d);
    vector(prefix + "ffn_norm.weight", d, 1.0f);
    matrix(prefix + "ffn_gate.weight", d, s.n_ff);
    matrix(prefix + "ffn_up.weight", d, s.n_ff);
    matrix(prefix + "ffn_down.weight", s.n_ff, d);
  }
};

}  // namespace

void write_random_medusa(const std::string& path, const std::string& target_path,
                         const RandomHeadSpec& s) {
  Writer w("specd-medusa", target_path, s);
  w.w.set_u32("specd-medusa.head_count", s.medusa_heads);
  w.w.set_u32("specd-medusa.embedding_length", w.d);
  w.w.set_u32("specd-medusa.vocab_size", w.vocab);
  for (uint32_t n = 0; n < s.medusa_heads; ++n) {
    const std::string p = "medusa." + std::to_string(n) + ".fc.";
    w.matrix(p + "weight", w.d, w.d);
    w.vector(p + "bias", w.d, 0.0f);
  }
  w.w.write(path);
}

void write_random_eagle(const std::string& path, const std::string& target_path,
                        const RandomHeadSpec& s) {
  Writer w("specd-eagle", target_path, s);
  w.matrix("eagle.fc.weight", 2 * w.d, w.d);
  w.vector("eagle.fc.bias", w.d, 0.0f);
  w.block("specd-eagle", "eagle.blk.0.", s);
  w.w.write(path);
}

void write_random_mtp(const std::string& path, const std::string& target_path,
                      const RandomHeadSpec& s) {
  Writer w("specd-mtp", target_path, s);
  w.w.set_u32("specd-mtp.predict_offset", 2);
  w.vector("mtp.hnorm.weight", w.d, 1.0f);
  w.vector("mtp.enorm.weight", w.d, 1.0f);
  w.matrix("mtp.eh_proj.weight", 2 * w.d, w.d);
  w.block("specd-mtp", "mtp.blk.0.", s);
  w.w.write(path);
}

}  // namespace specd::test
