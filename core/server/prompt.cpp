#include "server/prompt.hpp"

#include <algorithm>
#include <string_view>

#include "server/harmony_chat.hpp"
#include "server/tool_calls.hpp"

namespace specd::server {
namespace {

struct Piece {
  int32_t id = -1;   // a control token, or -1 for plain text
  std::string text;  // plain text (adjacent plain pieces are merged)
};

void add_plain(std::vector<Piece>& pieces, std::string_view text) {
  if (text.empty()) return;
  if (!pieces.empty() && pieces.back().id < 0)
    pieces.back().text += text;
  else
    pieces.push_back({-1, std::string(text)});
}

}  // namespace

PromptEncoder::PromptEncoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
  const Vocab& v = tokenizer.vocab();
  for (int32_t id = 0; id < v.size(); ++id)
    if (v.type[id] == TokenType::kControl && !v.text[id].empty()) control_by_length_.push_back(id);
  // Longest first, so that a control token whose text contains another's wins (the order
  // Tokenizer::encode uses).
  std::stable_sort(control_by_length_.begin(), control_by_length_.end(),
                   [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });
}

std::vector<int32_t> PromptEncoder::encode_completion(const std::string& prompt) const {
  return tokenizer_.encode(prompt, /*add_special=*/true, /*parse_special=*/false);
}

std::vector<int32_t> PromptEncoder::encode_chat(const std::vector<ChatSegment>& segments) const {
  const Vocab& v = tokenizer_.vocab();
  std::vector<Piece> pieces;
  for (const ChatSegment& segment : segments) {
    if (!segment.scaffolding) {
      add_plain(pieces, segment.text);
      continue;
    }
    // Split the template's text at control-token texts, longest first.
    std::vector<Piece> frags = {{-1, segment.text}};
    for (int32_t id : control_by_length_) {
      const std::string& s = v.text[id];
      std::vector<Piece> next;
      for (Piece& fr : frags) {
        if (fr.id >= 0) {
          next.push_back(std::move(fr));
          continue;
        }
        size_t pos = 0;
        for (size_t hit; (hit = fr.text.find(s, pos)) != std::string::npos; pos = hit + s.size()) {
          if (hit > pos) next.push_back({-1, fr.text.substr(pos, hit - pos)});
          next.push_back({id, {}});
        }
        if (pos < fr.text.size()) next.push_back({-1, fr.text.substr(pos)});
      }
      frags.swap(next);
    }
    for (Piece& fr : frags) {
      if (fr.id >= 0)
        pieces.push_back(std::move(fr));
      else
        add_plain(pieces, fr.text);
    }
  }

  // Each plain run starts the text or follows a control token, as in Tokenizer::encode, so
  // encoding it alone (user-defined tokens still matched) gives the same ids.
  std::vector<int32_t> out;
  if (tokenizer_.add_bos()) out.push_back(tokenizer_.bos_id());
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      out.push_back(p.id);
    } else {
      std::vector<int32_t> ids = tokenizer_.encode(p.text, /*add_special=*/false,
                                                   /*parse_special=*/false);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  }
  if (tokenizer_.add_eos()) out.push_back(tokenizer_.eos_id());
  return out;
}

namespace {

// Checks one prompt against the room the target has and clamps max_tokens to what is left.
PreparedPrompt bounded(std::vector<int32_t> tokens, int max_tokens, const std::string& field,
                       uint32_t context_length, int kv_budget) {
  const size_t n = tokens.size();
  if (n == 0)
    throw RequestError(400, field,
                       "'" + field + "' is empty and the model adds no BOS token to start from");
  size_t limit = context_length;
  std::string what = "the context holds " + std::to_string(context_length);
  if (kv_budget > 0 && size_t(kv_budget) < limit) {
    limit = size_t(kv_budget);
    what = "the server's kv_budget is " + std::to_string(limit);
  }
  if (n >= limit)
    throw RequestError(400, field,
                       "'" + field + "' has " + std::to_string(n) + " tokens; " + what +
                           ", leaving no room to generate");
  PreparedPrompt p;
  p.tokens = std::move(tokens);
  p.max_tokens = int(std::min<size_t>(size_t(max_tokens), limit - n));
  return p;
}

}  // namespace

void prepare_prompt(CompletionRequest& r, const PromptEncoder& encoder, ChatFamily family,
                    uint32_t context_length, int kv_budget) {
  r.prepared.clear();
  r.opened_call.clear();
  if (r.chat) {
    const bool harmony = family == ChatFamily::harmony;
    if (!r.reasoning_effort.empty() && !harmony)
      throw RequestError(400, "reasoning_effort",
                         "'reasoning_effort': the " + chat_family_name(family) +
                             " chat template has no reasoning effort (the harmony template of "
                             "gpt-oss models has)",
                         "unsupported_field");
    if (!family_has_reasoning(family))
      for (size_t i = 0; i < r.messages.size(); ++i)
        if (!r.messages[i].reasoning.empty()) {
          const std::string field = "messages[" + std::to_string(i) + "].reasoning_content";
          throw RequestError(400, field,
                             "'" + field + "': the " + chat_family_name(family) +
                                 " chat template has no place for an assistant's reasoning "
                                 "(the qwen3.5 and harmony templates have); leave it out",
                             "unsupported_field");
        }
    std::vector<ChatSegment> segments;
    try {
      segments = render_chat_segments(
          family, r.messages,
          r.tools.choice == ToolRequest::Choice::none ? std::vector<ToolFunction>{} : r.tools.tools,
          ChatOptions{r.reasoning_effort, ""});
    } catch (const std::invalid_argument& e) {
      // The families without a tool-call format refuse tools; the others refuse a message.
      throw RequestError(
          400, family_has_tools(family) || r.tools.tools.empty() ? "messages" : "tools",
          family_has_tools(family) ? std::string(e.what())
                                   : std::string(e.what()) +
                                         ": tools, tool calls and tool messages need a chatml "
                                         "(qwen), llama3, mistral, qwen3.5 or harmony template "
                                         "([server] chat_template)");
    }
    if (harmony) {
      // gpt-oss's channel markers are control tokens: rendered as text, so that its output can
      // be read (harmony_output.hpp, which never passes them on); and the end of an answer
      // (<|return|>), of a call (<|call|>) or of the text (<|endoftext|>) ends generation,
      // whichever one EOS the vocabulary names (llama.cpp ends at all three too).
      r.sampling.render_special = true;
      for (const char* end : {"<|return|>", "<|call|>", "<|endoftext|>"})
        if (std::find(r.sampling.stop.begin(), r.sampling.stop.end(), end) == r.sampling.stop.end())
          r.sampling.stop.push_back(end);
    }
    if (r.tools.forced()) {
      r.sampling.grammar = tool_call_grammar(family, r.tools, &r.opened_call);
      r.grammar_field = "tools";
      // Harmony: the prompt opens the call; the grammar forces its arguments.
      if (!r.opened_call.empty()) append_scaffolding(segments, harmony_call_opening(r.opened_call));
    }
    r.prepared.push_back(bounded(encoder.encode_chat(segments), r.max_tokens, "messages",
                                 context_length, kv_budget));
    return;
  }
  const Tokenizer& tokenizer = encoder.tokenizer();
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    const PromptInput& in = r.prompts[i];
    const std::string field = r.prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]" : "prompt";
    if (in.is_ids)
      for (int32_t id : in.ids)
        if (id >= tokenizer.n_tokens())
          throw RequestError(400, field,
                             "'" + field + "' holds token id " + std::to_string(id) +
                                 "; the vocabulary has " + std::to_string(tokenizer.n_tokens()) +
                                 " tokens");
    PreparedPrompt p = bounded(in.is_ids ? in.ids : encoder.encode_completion(in.text),
                               r.max_tokens, field, context_length, kv_budget);
    if (r.echo) p.echo = in.is_ids ? tokenizer.decode(in.ids, r.sampling.render_special) : in.text;
    r.prepared.push_back(std::move(p));
  }
}

}  // namespace specd::server
