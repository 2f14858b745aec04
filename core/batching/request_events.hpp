// What a submitted job tells its submitter, as typed events: the scheduler's worker pushes
// them into the job's sink, and the submitter formats them on its own thread (the HTTP
// server's handler: SSE chunks, tool calls, logprob texts). The batching layer never
// formats a response.
//
// Per job, in order: `started` or `refused` (then nothing more); after `started`, `logprob`
// (when asked for) before each token's `text`, then `done` with the result or `failed`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "batching/refusal.hpp"
#include "engine/generation_stats.hpp"

namespace specd::batching {

struct RequestEvent {
  enum class Kind {
    started,  // admitted: generation begins
    refused,  // not admitted (refusal set); nothing else follows
    logprob,  // one generated token's entry (logprob set)
    text,     // the next piece of the output (text)
    done,     // finished (result set: its stop_reason says how, "cancelled" included)
    failed,   // ended by a failure mid-generation (refusal set)
  };
  Kind kind = Kind::text;
  size_t choice = 0;  // the job's Job::choice: which of one request's jobs
  std::string text;
  size_t tokens = 0;  // text: the tokens generated when this piece came out
  TokenLogprob logprob;
  std::shared_ptr<const GenerationResult> result;
  std::optional<Refusal> refusal;

  // Whether this is the job's last event.
  bool last() const { return kind == Kind::refused || kind == Kind::done || kind == Kind::failed; }
};

// Where a job's events go. push() is called on the scheduler's worker, between or inside
// its steps, and must not block on the submitter: a sink that formats or writes to a client
// belongs on another thread (EventQueue).
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void push(RequestEvent event) = 0;
};

// A sink that another thread drains: the worker pushes, the submitter waits and takes.
// Thread rules: push() and take() from any threads, concurrently.
class EventQueue : public EventSink {
 public:
  void push(RequestEvent event) override;
  // Moves every event pushed so far into `out` (appended, in order), waiting up to `timeout`
  // for the first when there is none. Returns whether any was taken.
  bool take(std::vector<RequestEvent>& out, std::chrono::milliseconds timeout);

 private:
  std::mutex mutex_;
  std::condition_variable pushed_;
  std::deque<RequestEvent> events_;
};

}  // namespace specd::batching
