#include "common/memory_release.hpp"

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

namespace specd {
namespace {

class Releaser {
 public:
  using Clock = std::chrono::steady_clock;

  ~Releaser() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void ask() {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = Clock::now();
    if (!first_) first_ = now;
    last_ = now;
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    wake_.notify_all();
  }

  uint64_t done() const { return done_; }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      if (!first_) {
        wake_.wait(lock);
        continue;
      }
      const Clock::time_point due =
          std::min(last_ + std::chrono::milliseconds(100), *first_ + std::chrono::seconds(1));
      if (Clock::now() < due) {
        wake_.wait_until(lock, due);
        continue;
      }
      first_.reset();
      lock.unlock();
      malloc_trim(0);
      ++done_;
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Clock::time_point> first_;  // the first ask since the last trim
  Clock::time_point last_;
  bool stopping_ = false;
  std::atomic<uint64_t> done_{0};
  std::thread thread_;
};

Releaser& releaser() {
  static Releaser r;
  return r;
}

}  // namespace

void release_freed_memory() {
  releaser().ask();
}

void trim_heap_eagerly() {
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_MMAP_THRESHOLD_")) return;
  // Both fixed: setting one turns off glibc's dynamic mmap threshold, which would otherwise
  // stay at 128 KiB and send every larger block (a step's buffers) to mmap and back.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 4 << 20);
}

uint64_t memory_releases() {
  return releaser().done();
}

}  // namespace specd
