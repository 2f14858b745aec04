#include "runtime/thread_pool.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPECD_CPU_RELAX() _mm_pause()
#else
#define SPECD_CPU_RELAX() ((void)0)
#endif

namespace specd::cpu {

namespace {
// Spin before sleeping: long enough to catch the next op of a decoded token and the next
// token (about 0.3 ms at 17 ns per pause), short enough not to burn a core for long when the
// pool is idle. A sleeping worker that another process's thread displaced wakes late, and a
// decoding step then runs on the caller alone: 4000 spins (70 us) lost 2-thread decoding to
// that whenever one other process ran.
constexpr int kSpinIterations = 20000;

constexpr uint64_t kClosed = uint64_t{1} << 31;  // the run takes no more workers
constexpr uint64_t kJoined = kClosed - 1;        // mask: workers in the run

uint32_t generation_of(uint64_t state) {
  return static_cast<uint32_t>(state >> 32);
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  state_.store(kClosed);  // generation 0: no run
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    state_.store((uint64_t{generation_of(state_.load()) + 1u} << 32) | kClosed);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain() {
  for (;;) {
    const int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    (*fn_)(t);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;  // the generation at construction: no run() may be missed
  for (;;) {
    int spins = 0;
    uint64_t s;
    while (generation_of(s = state_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        SPECD_CPU_RELAX();
      } else {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_of(state_.load()) != seen; });
      }
    }
    if (stop_.load()) return;
    seen = generation_of(s);
    // Join unless the caller has handed out every task and closed the run already (or, late
    // enough, started the next one: the loop above then sees it).
    bool joined = false;
    while (!joined && !(s & kClosed) && generation_of(s) == seen)
      joined = state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                            std::memory_order_acquire);
    if (!joined) continue;
    drain();
    const uint64_t before = state_.fetch_sub(1, std::memory_order_acq_rel);
    if ((before & kJoined) == 1 && (before & kClosed)) {
      std::lock_guard<std::mutex> lock(mutex_);  // pairs with the caller's predicate check
      done_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t)>& fn) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t);
    return;
  }
  // The last run is closed and nobody is in it: fn_ and n_tasks_ are the caller's to set.
  fn_ = &fn;
  n_tasks_ = n_tasks;
  next_.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint32_t g = generation_of(state_.load(std::memory_order_relaxed)) + 1;
    state_.store(uint64_t{g} << 32, std::memory_order_release);  // open, nobody joined
  }
  wake_.notify_all();
  drain();
  // Every task is handed out: a worker not in by now has nothing to do and is not waited for.
  state_.fetch_or(kClosed, std::memory_order_acq_rel);
  for (int spins = 0; state_.load(std::memory_order_acquire) & kJoined; ++spins) {
    if (spins < kSpinIterations) {
      SPECD_CPU_RELAX();
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return (state_.load(std::memory_order_acquire) & kJoined) == 0; });
      break;
    }
  }
}

}  // namespace specd::cpu
