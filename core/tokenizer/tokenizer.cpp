#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "common/error.hpp"
#include "common/printable.hpp"
#include "gguf/gguf_reader.hpp"
#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace specd {

namespace {

// Whether `text` is one UTF-8 character (a BPE alphabet symbol).
bool one_code_point(const std::string& text) {
  if (text.empty()) return false;
  const auto lead = static_cast<unsigned char>(text[0]);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : 4;
  return text.size() == n;
}

constexpr std::string_view kSpmSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space

std::string spm_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == ' ') {
      out += kSpmSpace;
    } else {
      out += c;
    }
  }
  return out;
}

// "<0xAB>" -> 0xAB, or -1.
int parse_byte_token(const std::string& s) {
  if (s.size() != 6 || s.compare(0, 3, "<0x") != 0 || s[5] != '>') return -1;
  int v = 0;
  for (size_t k = 3; k < 5; ++k) {
    const char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      v |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      v |= c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return v;
}

// A special id key: absent or negative means none; an id past the vocabulary is an error.
int32_t special_id(const GgufFile& f, const char* key, int32_t fallback, int32_t n_tokens) {
  const auto v = f.get_i64_opt(key);
  if (!v) return fallback < n_tokens ? fallback : -1;
  if (*v < 0) return -1;
  if (*v >= n_tokens) {
    throw Error(f.path() + ": " + key + " = " + std::to_string(*v) + " is outside the " +
                std::to_string(n_tokens) + "-token vocabulary");
  }
  return static_cast<int32_t>(*v);
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufFile& f) {
  auto fail = [&](const std::string& what) -> void { throw Error(f.path() + ": " + what); };
  Tokenizer tok;
  Vocab& v = tok.vocab_;

  const std::string& model = f.get_string("tokenizer.ggml.model");
  if (model == "gpt2") {
    v.model = TokenizerModel::kBpe;
  } else if (model == "llama") {
    v.model = TokenizerModel::kSpm;
  } else {
    fail("unsupported tokenizer.ggml.model '" + model + "' (supported: gpt2, llama)");
  }
  const bool spm = v.model == TokenizerModel::kSpm;
  // llama.cpp's defaults: SentencePiece vocabularies add BOS and a space prefix, BPE adds BOS
  // only for the pre-tokenizers that ask for it (Llama 3).
  bool bos_default = spm;

  const GgufValue& tokens = f.get_array("tokenizer.ggml.tokens", GgufType::kString);
  const size_t n = tokens.array_size();
  if (n == 0) fail("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    fail("tokenizer.ggml.tokens has too many tokens");
  }
  v.text.reserve(n);
  for (size_t k = 0; k < n; ++k) v.text.emplace_back(tokens.string_at(k));

  v.score.assign(n, 0.0f);
  if (const GgufValue* scores = f.get_array_opt("tokenizer.ggml.scores", GgufType::kFloat32)) {
    if (scores->array_size() != n) {
      fail("tokenizer.ggml.scores has " + std::to_string(scores->array_size()) + " entries for " +
           std::to_string(n) + " tokens");
    }
    for (size_t k = 0; k < n; ++k) v.score[k] = static_cast<float>(scores->float_at(k));
  }

  v.type.assign(n, TokenType::kNormal);
  if (const GgufValue* types = f.get_array_opt("tokenizer.ggml.token_type", GgufType::kInt32)) {
    if (types->array_size() != n) {
      fail("tokenizer.ggml.token_type has " + std::to_string(types->array_size()) +
           " entries for " + std::to_string(n) + " tokens");
    }
    for (size_t k = 0; k < n; ++k) {
      const int64_t t = types->int_at(k);
      if (t < 0 || t > static_cast<int64_t>(TokenType::kByte)) {
        fail("tokenizer.ggml.token_type[" + std::to_string(k) + "] = " + std::to_string(t) +
             " is not a known token type");
      }
      v.type[k] = static_cast<TokenType>(t);
    }
  }

  // A string that appears twice maps to its last id, as in llama.cpp: BPE trainers add one
  // token per merge even when two merges spell the same string. But a SentencePiece model
  // never holds two normal (or two byte) pieces alike, and a BPE alphabet never holds one
  // symbol twice (merges make strings of two or more): such a file is refused, since the
  // prompt would be encoded with whichever id came last, silently another token than the
  // model saw there.
  std::unordered_map<std::string, int32_t> any_text;
  any_text.reserve(n);
  v.text_to_id.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const auto id = static_cast<int32_t>(k);
    const TokenType t = v.type[k];
    auto [at, fresh] = any_text.try_emplace(v.text[k], id);
    if (!fresh) {
      const TokenType before = v.type[static_cast<size_t>(at->second)];
      const bool encodes = [](TokenType x) {
        return x == TokenType::kNormal || x == TokenType::kByte || x == TokenType::kUndefined;
      }(t);
      if (encodes && before == t && (spm || one_code_point(v.text[k])))
        fail("tokens " + std::to_string(at->second) + " and " + std::to_string(id) + " are both '" +
             printable(v.text[k]) +
             "' (tokenizer.ggml.tokens): a prompt could not be encoded unambiguously");
      at->second = id;
    }
    if (t != TokenType::kControl && t != TokenType::kUnknown && t != TokenType::kByte) {
      v.text_to_id[v.text[k]] = id;
    }
  }

  const auto n32 = static_cast<int32_t>(n);
  v.byte_to_id.fill(-1);
  if (spm) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = any_text.find(name);
      if (it != any_text.end()) v.byte_to_id[b] = it->second;
    }
    tok.pre_ = PreTokenizer::kNone;
    tok.bos_id_ = special_id(f, "tokenizer.ggml.bos_token_id", 1, n32);
    tok.eos_id_ = special_id(f, "tokenizer.ggml.eos_token_id", 2, n32);
    v.unk_id = special_id(f, "tokenizer.ggml.unknown_token_id", 0, n32);
  } else {
    for (int b = 0; b < 256; ++b) {
      std::string s;
      utf8_append(s, gpt2_byte_to_codepoint(static_cast<uint8_t>(b)));
      auto it = any_text.find(s);
      if (it != any_text.end()) v.byte_to_id[b] = it->second;
    }
    const GgufValue& merges = f.get_array("tokenizer.ggml.merges", GgufType::kString);
    v.merge_rank.reserve(merges.array_size());
    for (size_t k = 0; k < merges.array_size(); ++k) {
      const std::string m(merges.string_at(k));
      const size_t space = m.find(' ', 1);
      if (space == std::string::npos || space + 1 >= m.size()) {
        fail("tokenizer.ggml.merges[" + std::to_string(k) + "] = '" + m +
             "' is not two tokens separated by a space");
      }
      v.merge_rank.emplace(m, static_cast<int32_t>(std::min<size_t>(k, INT32_MAX)));
    }
    // Without the key llama.cpp uses its default pre-tokenizer (and warns).
    tok.pre_name_ = f.get_string_opt("tokenizer.ggml.pre").value_or("");
    const auto info = pre_tokenizer_from_name(tok.pre_name_.empty() ? "default" : tok.pre_name_);
    if (!info) {
      fail("unsupported tokenizer.ggml.pre '" + tok.pre_name_ +
           "' (supported: " + pre_tokenizer_names() + ")");
    }
    tok.pre_ = info->type;
    v.ignore_merges = info->ignore_merges;
    bos_default = info->add_bos;
    tok.splitter_ = WordSplitter(tok.pre_);
    tok.bos_id_ = special_id(f, "tokenizer.ggml.bos_token_id", -1, n32);
    tok.eos_id_ = special_id(f, "tokenizer.ggml.eos_token_id", -1, n32);
    v.unk_id = special_id(f, "tokenizer.ggml.unknown_token_id", -1, n32);
  }
  tok.pad_id_ = special_id(f, "tokenizer.ggml.padding_token_id", -1, n32);
  tok.add_bos_ = f.get_bool_opt("tokenizer.ggml.add_bos_token").value_or(bos_default);
  tok.add_eos_ = f.get_bool_opt("tokenizer.ggml.add_eos_token").value_or(false);
  tok.add_space_prefix_ = spm && f.get_bool_opt("tokenizer.ggml.add_space_prefix").value_or(true);
  if (tok.add_bos_ && tok.bos_id_ < 0) fail("add_bos_token is set but there is no BOS token");
  if (tok.add_eos_ && tok.eos_id_ < 0) fail("add_eos_token is set but there is no EOS token");

  for (int32_t id = 0; id < n32; ++id) {
    const TokenType t = v.type[id];
    if ((t == TokenType::kControl || t == TokenType::kUserDefined) && !v.text[id].empty()) {
      tok.special_by_length_.push_back(id);
    }
  }
  std::stable_sort(tok.special_by_length_.begin(), tok.special_by_length_.end(),
                   [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });
  return tok;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_tokens()) {
    throw Error("token id " + std::to_string(id) + " is outside the " + std::to_string(n_tokens()) +
                "-token vocabulary");
  }
  return vocab_.text[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
  token_text(id);
  return vocab_.type[id];
}

float Tokenizer::token_score(int32_t id) const {
  token_text(id);
  return vocab_.score[id];
}

void Tokenizer::encode_text(std::string_view text, bool after_special,
                            std::vector<int32_t>& out) const {
  if (vocab_.model == TokenizerModel::kSpm) {
    std::string s = add_space_prefix_ && after_special ? " " : "";
    s += text;
    spm_encode(vocab_, spm_escape(s), out);
    return;
  }
  for (std::string_view word : splitter_.split(text)) bpe_encode_word(vocab_, word, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special,
                                       bool continuation) const {
  struct Fragment {
    int32_t id;  // -1 for raw text
    std::string_view text;
  };
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({-1, text});
  // Longest special strings first, so a token that contains another wins.
  for (int32_t id : special_by_length_) {
    if (!parse_special && vocab_.type[id] != TokenType::kUserDefined) continue;
    const std::string& s = vocab_.text[id];
    std::vector<Fragment> next;
    for (const Fragment& fr : frags) {
      if (fr.id >= 0) {
        next.push_back(fr);
        continue;
      }
      size_t pos = 0;
      for (size_t hit; (hit = fr.text.find(s, pos)) != std::string_view::npos;
           pos = hit + s.size()) {
        if (hit > pos) next.push_back({-1, fr.text.substr(pos, hit - pos)});
        next.push_back({id, {}});
      }
      if (pos < fr.text.size()) next.push_back({-1, fr.text.substr(pos)});
    }
    frags.swap(next);
  }

  std::vector<int32_t> out;
  if (add_special && add_bos_) out.push_back(bos_id_);
  bool after_special = !continuation;
  for (const Fragment& fr : frags) {
    if (fr.id >= 0) {
      out.push_back(fr.id);
      after_special = true;
    } else {
      encode_text(fr.text, after_special, out);
      after_special = false;
    }
  }
  if (add_special && add_eos_) out.push_back(eos_id_);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  const std::string& text = token_text(id);
  switch (vocab_.type[id]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused:
      return render_special ? text : std::string();
    case TokenType::kUserDefined:
      return text;
    case TokenType::kByte:
      if (vocab_.model == TokenizerModel::kSpm) {
        const int b = parse_byte_token(text);
        if (b >= 0) return std::string(1, static_cast<char>(b));
      }
      break;
    case TokenType::kNormal:
    case TokenType::kUndefined:
      break;
  }
  std::string out;
  if (vocab_.model == TokenizerModel::kSpm) {
    for (size_t pos = 0; pos < text.size();) {
      if (text.compare(pos, kSpmSpace.size(), kSpmSpace) == 0) {
        out += ' ';
        pos += kSpmSpace.size();
      } else {
        out += text[pos++];
      }
    }
    return out;
  }
  // Byte-level BPE: every character of the token stands for one byte; characters outside
  // the byte map (hand-added tokens) are kept as they are.
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Unit u = utf8_next(text, pos);
    const int b = u.valid ? gpt2_codepoint_to_byte(u.cp) : -1;
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(text, pos, u.len);
    }
    pos += u.len;
  }
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  bool strip = add_space_prefix_;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (strip && !piece.empty()) {
      if (piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  return out;
}

}  // namespace specd
