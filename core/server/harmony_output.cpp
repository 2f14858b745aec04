#include "server/harmony_output.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "server/json_body.hpp"
#include "server/request.hpp"

namespace specd::server {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kConstrain = "<|constrain|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kMarker = "<|";
constexpr std::string_view kFunctions = "functions.";
// What begins a header: a marker, or (first in the output) a recipient in the role part.
constexpr std::string_view kHeaderOpeners[] = {kStart, kChannel};
constexpr std::string_view kRecipientInRole = " to=functions.";
// Inside a body: what ends the message (<|end|>, <|return|>, <|call|>), what ends it and
// begins the next one's header, and what is dropped.
constexpr std::string_view kBodyMarkers[] = {"<|end|>", "<|return|>", "<|call|>", kStart,
                                             kChannel,  kConstrain,   kMessage};

bool starts(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
// `s` could still grow into `p`.
bool begins(std::string_view s, std::string_view p) {
  return s.size() < p.size() && p.substr(0, s.size()) == s;
}

// A header word's characters (roles, channels, recipients, content types).
bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == ':' || c == '/' || c == '=';
}

// A call's arguments, keys in the order the model wrote them.
std::optional<nlohmann::ordered_json> json_of(std::string_view text) {
  try {
    return parse_ordered_json_body(text);  // with the request body's nesting limit
  } catch (const RequestError&) {
    return std::nullopt;
  }
}

}  // namespace

HarmonyStream::HarmonyStream(std::vector<ToolFunction> tools, std::string id_seed,
                             std::string opened_call)
    : tools_(std::move(tools)), id_seed_(std::move(id_seed)), forced_(!opened_call.empty()) {
  if (forced_) {  // the prompt ends inside the call's header: the output is its body
    state_ = State::body;
    sink_ = Sink::call;
    call_name_ = std::move(opened_call);
  }
}

void HarmonyStream::emit(HarmonyDelta& d, std::string_view text) {
  if (text.empty()) return;
  switch (sink_) {
    case Sink::reasoning:
      d.reasoning += text;
      out_.reasoning += text;
      break;
    case Sink::content:
      d.content += text;
      out_.content += text;
      break;
    case Sink::call:
      call_body_ += text;
      break;
  }
}

void HarmonyStream::reset_header() {
  header_read_ = header_end_ = 0;
  channel_.clear();
  recipient_.clear();
  content_type_ = false;
}

void HarmonyStream::open_message() {
  if (starts(recipient_, kFunctions)) {
    const std::string name = recipient_.substr(kFunctions.size());
    for (const ToolFunction& t : tools_)
      if (t.name == name) {
        sink_ = Sink::call;
        call_name_ = name;
        call_body_.clear();
        return;
      }
  }
  sink_ = recipient_.empty() && channel_ == "analysis" ? Sink::reasoning : Sink::content;
}

HarmonyStream::Header HarmonyStream::scan_header(std::string_view h, bool at_end) {
  auto not_header = [&](size_t end) {
    header_end_ = std::max<size_t>(end, 1);  // at least the marker's '<': the text goes on
    return Header::not_header;
  };
  for (size_t at = header_read_;;) {
    header_read_ = at;
    if (at > kHarmonyMaxHeader) return not_header(at);
    if (at == h.size()) return Header::more;  // at the end: cut short, or spaces
    const std::string_view rest = h.substr(at);
    if (starts(rest, kMessage)) {
      header_end_ = at;
      return Header::message;
    }
    // A part: a marker and its word, or spaces and a word (a recipient or a content type).
    enum { role, channel, constrain, spaced } part;
    size_t word = at;
    if (rest.front() == '<') {
      if (starts(rest, kStart)) {
        part = role;
        word += kStart.size();
      } else if (starts(rest, kChannel)) {
        part = channel;
        word += kChannel.size();
      } else if (starts(rest, kConstrain)) {
        part = constrain;
        word += kConstrain.size();
      } else {
        for (std::string_view m : {kStart, kChannel, kConstrain, kMessage})
          if (begins(rest, m)) return Header::more;  // at the end: a header cut short
        return not_header(at);
      }
    } else if (rest.front() == ' ') {
      while (word < h.size() && h[word] == ' ') ++word;
      if (word == h.size()) return word > kHarmonyMaxHeader ? not_header(word) : Header::more;
      if (h[word] == '<') {  // spaces before a marker
        at = word;
        continue;
      }
      part = spaced;
    } else {
      return not_header(at);  // a character no header holds after a word
    }
    size_t end = word;
    while (end < h.size() && word_char(h[end])) ++end;
    if (end > kHarmonyMaxHeader) return not_header(end);
    if (end == h.size() && !at_end) return Header::more;  // the word may go on
    if (end < h.size() && h[end] != ' ' && h[end] != '<') return not_header(end);
    const std::string_view w = h.substr(word, end - word);
    if (part == channel) {
      channel_ = std::string(w);
    } else if (part == spaced) {
      if (starts(w, "to=")) {
        recipient_ = std::string(w.substr(3));
      } else if (recipient_.empty() || content_type_) {
        return not_header(end);  // words no header holds: "<|channel|>final hello"
      } else {
        content_type_ = true;
      }
    }
    at = end;
  }
}

void HarmonyStream::close_message(HarmonyDelta& d) {
  if (sink_ == Sink::call) {
    const std::optional<nlohmann::ordered_json> args = json_of(call_body_);
    if (args && args->is_object()) {
      out_.calls.push_back(
          {tool_call_id(id_seed_, out_.calls.size()), call_name_,
           args->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)});
    } else if (!forced_) {
      // Not a call after all (not JSON, or cut short): what the model wrote, as content.
      sink_ = Sink::content;
      emit(d, call_body_);
    }
    call_body_.clear();
  }
  sink_ = Sink::content;
}

void HarmonyStream::run(HarmonyDelta& d, bool at_end) {
  pending_.erase(0, read(d, at_end));  // once: a piece's text is moved once, however many parts
}

size_t HarmonyStream::read(HarmonyDelta& d, bool at_end) {
  const std::string_view all = pending_;
  size_t done = 0;  // bytes read
  for (;;) {
    const std::string_view rest = all.substr(done);
    switch (state_) {
      case State::first:
      case State::between: {
        // A header starts with <|start|> or <|channel|> (or, first, with a recipient in the
        // role part); what may still grow into one waits for the next piece.
        if (rest.empty()) return done;
        bool opens = false, may_open = false;
        for (std::string_view o : kHeaderOpeners) {
          opens = opens || starts(rest, o);
          may_open = may_open || begins(rest, o);
        }
        if (state_ == State::first) {
          opens = opens || starts(rest, kRecipientInRole);
          may_open = may_open || begins(rest, kRecipientInRole);
        }
        if (opens) {
          reset_header();
          state_ = State::header;
        } else if (may_open && !at_end) {
          return done;
        } else if (may_open && state_ == State::between) {
          return all.size();  // a header cut short after a message's end: nothing
        } else if (state_ == State::first) {
          state_ = State::plain;  // not harmony at all: the whole output is content
        } else {
          sink_ = Sink::content;  // text after a message's end with no header: content
          state_ = State::body;
        }
        continue;
      }
      case State::plain:
        emit(d, rest);
        return all.size();
      case State::header:
        switch (scan_header(rest, at_end)) {
          case Header::message:
            open_message();
            done += header_end_ + kMessage.size();
            reset_header();
            state_ = State::body;
            continue;
          case Header::more:
            return at_end ? all.size() : done;  // at the end, a header cut short: no message
          case Header::not_header:
            // What was read as a header is text: content as written, and the text goes on.
            sink_ = Sink::content;
            emit(d, rest.substr(0, header_end_));
            done += header_end_;
            reset_header();
            state_ = State::body;
            continue;
        }
        return done;
      case State::body: {
        const size_t at = rest.find(kMarker);
        if (at == std::string_view::npos) {
          // A last '<' may begin a marker.
          const size_t n = rest.size() - (!at_end && !rest.empty() && rest.back() == '<');
          emit(d, rest.substr(0, n));
          if (at_end) close_message(d);
          return done + n;
        }
        emit(d, rest.substr(0, at));
        done += at;
        const std::string_view tail = rest.substr(at);
        std::string_view marker;
        bool waiting = false;
        for (std::string_view m : kBodyMarkers) {
          if (starts(tail, m)) marker = m;
          waiting = waiting || (!at_end && begins(tail, m));
        }
        if (marker.empty()) {
          if (waiting) return done;
          emit(d, kMarker);  // not a marker: text
          done += kMarker.size();
        } else if (marker == kStart || marker == kChannel) {
          close_message(d);  // a new message with no <|end|> before it
          reset_header();
          state_ = State::header;
        } else if (marker == kConstrain || marker == kMessage) {
          done += marker.size();  // a header's marker out of place: dropped
        } else {
          done += marker.size();
          close_message(d);
          state_ = State::between;
        }
        continue;
      }
    }
  }
}

HarmonyDelta HarmonyStream::feed(std::string_view piece) {
  HarmonyDelta d;
  pending_ += piece;
  run(d, false);
  return d;
}

HarmonyDelta HarmonyStream::finish() {
  HarmonyDelta d;
  run(d, true);
  pending_.clear();
  state_ = State::between;
  return d;
}

ParsedToolCalls parse_harmony(std::string_view text, const std::vector<ToolFunction>& tools,
                              const std::string& id_seed, const std::string& opened_call) {
  HarmonyStream stream(tools, id_seed, opened_call);
  stream.feed(text);
  stream.finish();
  return stream.parsed();
}

}  // namespace specd::server
