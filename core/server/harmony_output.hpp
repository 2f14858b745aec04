// What gpt-oss writes after the generation prompt <|start|>assistant, read into OpenAI's
// message parts. Its output is harmony messages, HEADER<|message|>BODY then an end marker:
//   <|channel|>analysis<|message|>...<|end|>            -> reasoning_content
//   <|start|>assistant<|channel|>final<|message|>...     -> content (ended by <|return|>)
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
//   {...}                                               -> a tool call (ended by <|call|>)
// A header's recipient may also stand in the role part (" to=functions.NAME<|channel|>...").
// A message to one of the request's functions on any channel is a call when its body is a
// JSON object; otherwise (not JSON, cut short, an unknown function, calls not asked for) its
// body is content, as the other families show an output that holds no well-formed call. A
// commentary message without a recipient (a preamble the model addresses to the user) is
// content.
//
// A header starts with <|start|> or <|channel|> (or, first in the output, with the role
// part's " to=functions."), and holds only its parts: a marker (<|start|>, <|channel|>,
// <|constrain|>) and its word, " to=RECIPIENT", and one content-type word after a recipient
// (" json"); a word is letters, digits and "._-:/=". Text that cannot be such a header, or a
// header longer than kHarmonyMaxHeader bytes, is content as written, and what follows it is
// read as a message's body; a header that the output's end cuts short is dropped. An output
// that does not begin with a header is plain content, markers and all.
// Inside a body, <|end|>, <|return|> and <|call|> end the message; <|start|> and <|channel|>
// end it and begin the next one's header (the model left out <|end|>); <|constrain|> and
// <|message|> are dropped; any other text is the body's.
//
// The markers are gpt-oss's control tokens: the server has them rendered as text in a harmony
// chat's output (prompt.hpp) and never passes them on, but for text that is no harmony (which
// is content as written). <|return|> and <|call|> end generation (stop strings there), so the
// output text ends before them.
//
// Thread rule: a HarmonyStream is one choice's, one thread at a time; parse_harmony is pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/chat_template.hpp"
#include "server/tool_calls.hpp"

namespace specd::server {

// The longest header read as one: the model's are a few dozen bytes.
constexpr size_t kHarmonyMaxHeader = 256;

// What a piece of output adds to the answer's reasoning and content.
struct HarmonyDelta {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

// Reads an output piece by piece: reasoning and content go out as soon as they are known to
// be such (a header is held until its <|message|> or until it cannot be one, text that may
// begin a marker until the next piece decides, a call's body until its message ends). The
// pieces' deltas add up to parsed()'s reasoning and content, whatever the pieces' boundaries;
// each piece is read once (a header's unfinished part again, up to kHarmonyMaxHeader bytes).
class HarmonyStream {
 public:
  // `tools`: the functions a message may call (none: no message is a call). `id_seed`: call
  // ids as tool_calls.hpp makes them. `opened_call`: the function whose call the prompt
  // opened (a forced tool_choice, harmony_call_opening): the whole output is its arguments,
  // and arguments that are not a JSON object (cut short) are dropped, never content.
  HarmonyStream(std::vector<ToolFunction> tools, std::string id_seed, std::string opened_call = "");

  HarmonyDelta feed(std::string_view piece);
  // The output has ended: what was held and can still be shown (a header cut short is
  // dropped, text held as a header that cannot be one is content; a cut call is content, or
  // dropped when forced). Call once, after the last feed.
  HarmonyDelta finish();
  // The answer so far: reasoning, content and the calls (in full once finished).
  const ParsedToolCalls& parsed() const { return out_; }

 private:
  enum class State { first, header, body, between, plain };
  enum class Sink { reasoning, content, call };
  enum class Header { message, more, not_header };
  // Reads `h` (pending_ from the header's start) as a header, from header_read_: its
  // <|message|> found (at header_end_), more text needed (or, at the end, a header cut
  // short), or text that is no header (its first header_end_ bytes).
  Header scan_header(std::string_view h, bool at_end);
  // Reads pending_ (all of it `at_end`), emitting what is known; returns the bytes read.
  size_t read(HarmonyDelta& d, bool at_end);
  void run(HarmonyDelta& d, bool at_end);
  void open_message();
  void close_message(HarmonyDelta& d);
  void emit(HarmonyDelta& d, std::string_view text);
  void reset_header();

  std::vector<ToolFunction> tools_;
  std::string id_seed_;
  bool forced_;
  State state_ = State::first;
  Sink sink_ = Sink::content;
  std::string pending_;  // output not yet read (State::header: the header so far)
  // State::header: the bytes of the header read as whole parts, and what they said.
  size_t header_read_ = 0;
  size_t header_end_ = 0;
  std::string channel_, recipient_;
  bool content_type_ = false;  // a bare content-type word was read
  std::string call_name_;      // Sink::call: the function called
  std::string call_body_;      // Sink::call: its arguments so far
  ParsedToolCalls out_;
};

// A whole output read as HarmonyStream reads it.
ParsedToolCalls parse_harmony(std::string_view text, const std::vector<ToolFunction>& tools,
                              const std::string& id_seed, const std::string& opened_call = "");

}  // namespace specd::server
