// Helpers for tests that submit jobs to the batching scheduler directly: a prompt's tokens
// (as `specd run` encodes a prompt), and a sink that hands a job's events to callbacks on
// the worker thread, as they are pushed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "batching/request_events.hpp"
#include "batching/scheduler.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::test {

// BOS when the model adds one, special-token text as plain text; encoded with the
// scheduler's engine, on its worker.
inline std::vector<int32_t> encode_prompt(batching::Scheduler& scheduler, const std::string& text) {
  std::vector<int32_t> tokens;
  scheduler.run_exclusive([&] {
    tokens = scheduler.engines().engine().tokenizer().encode(text, /*add_special=*/true,
                                                             /*parse_special=*/false);
  });
  return tokens;
}

// on_start(nullptr) when the job starts, on_start(refusal) when it is refused; on_done with
// the result, or with the failure.
struct CallbackSink : batching::EventSink {
  std::function<void(const batching::Refusal*)> on_start;
  std::function<void(const std::string&)> on_text;
  std::function<void(const TokenLogprob&)> on_logprob;
  std::function<void(const GenerationResult*, const batching::Refusal*)> on_done;

  void push(batching::RequestEvent e) override {
    using Kind = batching::RequestEvent::Kind;
    switch (e.kind) {
      case Kind::started:
        if (on_start) on_start(nullptr);
        break;
      case Kind::refused:
        if (on_start) on_start(&*e.refusal);
        break;
      case Kind::logprob:
        if (on_logprob) on_logprob(e.logprob);
        break;
      case Kind::text:
        if (on_text) on_text(e.text);
        break;
      case Kind::done:
        if (on_done) on_done(e.result.get(), nullptr);
        break;
      case Kind::failed:
        if (on_done) on_done(nullptr, &*e.refusal);
        break;
    }
  }
};

// A job with a CallbackSink, and that sink.
inline std::shared_ptr<batching::Job> job_with_callbacks() {
  auto job = std::make_shared<batching::Job>();
  job->events = std::make_shared<CallbackSink>();
  return job;
}
inline CallbackSink& callbacks(batching::Job& job) {
  return static_cast<CallbackSink&>(*job.events);
}

}  // namespace specd::test
