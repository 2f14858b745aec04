#include "thread_pool.hpp"

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
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
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
  uint64_t seen = 0;  // the generation at construction: no run() may be missed
  for (;;) {
    int spins = 0;
    uint64_t g;
    while ((g = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        SPECD_CPU_RELAX();
      } else {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
      }
    }
    seen = g;
    if (stop_.load()) return;
    drain();
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
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
  fn_ = &fn;
  n_tasks_ = n_tasks;
  next_.store(0, std::memory_order_relaxed);
  busy_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  drain();
  for (int spins = 0; busy_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinIterations) {
      SPECD_CPU_RELAX();
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return busy_.load(std::memory_order_acquire) == 0; });
      break;
    }
  }
}

}  // namespace specd::cpu
