#include "server/scheduler.hpp"

#include "common/error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::server {

Scheduler::Scheduler(EngineCache& engines, int queue_limit)
    : engines_(engines),
      queue_limit_(static_cast<size_t>(queue_limit)),
      worker_([this] { work(); }) {}

Scheduler::~Scheduler() {
  drain();
}

bool Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || queue_.size() >= queue_limit_) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

size_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void Scheduler::run_exclusive(std::function<void()> fn) {
  std::packaged_task<void()> task(std::move(fn));
  std::future<void> done = task.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw Error("the server is shutting down");
    exclusive_.push_back(std::move(task));
  }
  wake_.notify_one();
  done.get();
}

void Scheduler::drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Scheduler::work() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !exclusive_.empty(); });
      if (!exclusive_.empty()) {
        std::packaged_task<void()> task = std::move(exclusive_.front());
        exclusive_.pop_front();
        lock.unlock();
        task();  // its exception goes to the caller's future
        continue;
      }
      if (queue_.empty()) return;  // stopping and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    run(*job);
    running_ = false;
  }
}

void Scheduler::run(Job& job) {
  const CompletionRequest& r = job.request;
  Engine* engine = nullptr;
  std::vector<int32_t> prompt;
  try {
    engine = &engines_.get(r.speculative);
    engines_.check_sampling(*engine, r);
    // A completion prompt is encoded as `specd run` encodes it; a rendered chat also
    // turns the template's special-token texts into their ids.
    // (The HTTP handler sets prompt_tokens, with chat content kept plain text.)
    prompt = !r.prompt_tokens.empty()
                 ? r.prompt_tokens
                 : engine->tokenizer().encode(job.prompt_text, /*add_special=*/true,
                                              /*parse_special=*/r.chat);
    if (prompt.empty())
      throw RequestError(400, r.chat ? "messages" : "prompt",
                         std::string("'") + (r.chat ? "messages" : "prompt") +
                             "' is empty and the model adds no BOS token to start from");
    if (prompt.size() >= engine->context_length())
      throw RequestError(400, r.chat ? "messages" : "prompt",
                         std::string("'") + (r.chat ? "messages" : "prompt") + "' has " +
                             std::to_string(prompt.size()) + " tokens; the context holds " +
                             std::to_string(engine->context_length()) +
                             ", leaving no room to generate");
    if (job.kv_budget > 0 && prompt.size() + size_t(r.max_tokens) > size_t(job.kv_budget))
      throw RequestError(400, "max_tokens",
                         "'max_tokens': the prompt's " + std::to_string(prompt.size()) +
                             " tokens plus max_tokens = " + std::to_string(r.max_tokens) +
                             " exceed the server's kv_budget of " + std::to_string(job.kv_budget) +
                             " tokens");
  } catch (const RequestError& e) {
    job.on_start(&e);
    return;
  } catch (const std::exception& e) {
    RequestError error(500, "", e.what(), "server_error");
    job.on_start(&error);
    return;
  }
  job.proposer = engine->proposer_name();
  job.rule = engine->rule_name();
  job.on_start(nullptr);

  GenerateOptions options;
  options.max_tokens = r.max_tokens;
  options.sampling = r.sampling;
  options.on_text = job.on_text;
  options.cancelled = [&job] { return job.cancelled.load(); };
  try {
    if (r.seed) engine->reseed(*r.seed);
    GenerationResult result = engine->generate_tokens(prompt, options);
    job.on_done(&result, nullptr);
  } catch (const UsageError& e) {
    RequestError error(400, r.chat ? "messages" : "prompt", e.what());
    job.on_done(nullptr, &error);
  } catch (const std::exception& e) {
    RequestError error(500, "", e.what(), "server_error");
    job.on_done(nullptr, &error);
  }
}

}  // namespace specd::server
