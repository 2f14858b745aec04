// llama.cpp's BPE pre-tokenizers (llama-vocab.cpp): which tokenizer.ggml.pre values select which
// split patterns, and the patterns themselves, applied as unicode_regex_split applies them.
#include "tokenizer/pretokenizer.hpp"

namespace specd {

namespace {

// The two patterns llama.cpp matches with hand-written code; specd does the same
// (pretokenize_gpt2, pretokenize_llama3), every other pattern goes through SplitPattern.
constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr std::string_view kLlama3Pattern =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Pattern =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// DeepSeek LLM spells its letters as explicit ranges (no \p{L}). The escaped ones are Greek
// and letterlike characters that Unicode normalization would replace: they must stay as they
// are for the ranges to hold.
constexpr std::string_view kDeepseekLlmLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷ"
    "ͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ"
    "-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-"
    "\u1F7Dᾀ-ᾴᾶ-ᾼ\u1FBEῂ-ῄῆ-ῌῐ-\u1FD3ῖ-\u1FDBῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓ"
    "ℕℙ-ℝℤ\u2126ℨ\u212A-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳ"
    "Ꙁ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰"
    "-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
constexpr std::string_view kCjk = "[一-龥ࠀ-一가-퟿]+";

struct Name {
  std::string_view name;
  PreTokenizerInfo info;
};

constexpr Name kNames[] = {
    {"default", {PreTokenizer::kDefault, false, false}},
    {"gpt-2", {PreTokenizer::kGpt2, false, false}},
    {"phi-2", {PreTokenizer::kGpt2, false, false}},
    {"mpt", {PreTokenizer::kGpt2, false, false}},
    {"olmo", {PreTokenizer::kGpt2, false, false}},
    {"llama3", {PreTokenizer::kLlama3, true, true}},
    {"llama-v3", {PreTokenizer::kLlama3, true, true}},
    {"llama-bpe", {PreTokenizer::kLlama3, true, true}},
    {"falcon3", {PreTokenizer::kLlama3, true, true}},
    {"dbrx", {PreTokenizer::kLlama3, false, false}},
    {"smaug-bpe", {PreTokenizer::kLlama3, false, false}},
    {"qwen2", {PreTokenizer::kQwen2, false, false}},
    {"deepseek-r1-qwen", {PreTokenizer::kQwen2, false, false}},
    {"stablelm2", {PreTokenizer::kQwen2, false, false}},
    {"deepseek-llm", {PreTokenizer::kDeepseekLlm, false, false}},
    {"deepseek-coder", {PreTokenizer::kDeepseekCoder, false, false}},
    {"falcon", {PreTokenizer::kFalcon, false, false}},
    {"starcoder", {PreTokenizer::kStarcoder, false, false}},
    {"refact", {PreTokenizer::kStarcoder, false, false}},
    {"command-r", {PreTokenizer::kStarcoder, false, false}},
    {"smollm", {PreTokenizer::kStarcoder, false, false}},
    {"codeshell", {PreTokenizer::kStarcoder, false, false}},
    {"exaone", {PreTokenizer::kStarcoder, false, false}},
    {"minerva-7b", {PreTokenizer::kStarcoder, false, false}},
};

}  // namespace

std::optional<PreTokenizerInfo> pre_tokenizer_from_name(std::string_view name) {
  for (const Name& n : kNames) {
    if (n.name == name) return n.info;
  }
  return std::nullopt;
}

std::string pre_tokenizer_names() {
  std::string out;
  for (const Name& n : kNames) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

std::vector<std::string_view> pre_tokenizer_patterns(PreTokenizer type) {
  switch (type) {
    case PreTokenizer::kNone:
      return {};
    case PreTokenizer::kDefault:
      return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2Pattern, "\\p{N}+", "[0-9][0-9][0-9]"};
    case PreTokenizer::kGpt2:
      return {kGpt2Pattern};
    case PreTokenizer::kLlama3:
      return {kLlama3Pattern};
    case PreTokenizer::kQwen2:
      return {kQwen2Pattern};
    case PreTokenizer::kDeepseekLlm:
      return {"[\r\n]", kDeepseekLlmLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", kCjk,
              "\\p{N}+"};
    case PreTokenizer::kDeepseekCoder:
      return {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"};
    case PreTokenizer::kFalcon:
      return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2Pattern, "[0-9][0-9][0-9]"};
    case PreTokenizer::kStarcoder:
      return {"\\p{N}", kGpt2Pattern};
  }
  return {};
}

WordSplitter::WordSplitter(PreTokenizer type) {
  for (std::string_view p : pre_tokenizer_patterns(type)) {
    const Fast fast = p == kGpt2Pattern     ? Fast::kGpt2
                      : p == kLlama3Pattern ? Fast::kLlama3
                                            : Fast::kNone;
    steps_.push_back({fast, SplitPattern(p)});
  }
}

std::vector<std::string_view> WordSplitter::split(std::string_view text) const {
  std::vector<std::string_view> words;
  if (!text.empty()) words.push_back(text);
  for (const Step& step : steps_) {
    std::vector<std::string_view> next;
    next.reserve(words.size() * 2);
    for (std::string_view w : words) {
      if (step.fast == Fast::kGpt2) {
        const auto pieces = pretokenize_gpt2(w);
        next.insert(next.end(), pieces.begin(), pieces.end());
      } else if (step.fast == Fast::kLlama3) {
        const auto pieces = pretokenize_llama3(w, 3);
        next.insert(next.end(), pieces.begin(), pieces.end());
      } else {
        step.pattern.split(w, next);
      }
    }
    words.swap(next);
  }
  return words;
}

}  // namespace specd
