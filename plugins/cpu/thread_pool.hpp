// A fixed set of worker threads that run the tasks of one op. The caller thread takes part;
// tasks are handed out dynamically, so which thread runs a task never matters: kernels make
// each task's result independent of the thread that computes it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace specd::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // total threads including the caller, >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(t) for every t in [0, n_tasks) and returns when all are done.
  void run(int64_t n_tasks, const std::function<void(int64_t)>& fn);

 private:
  void worker_loop();
  void drain();

  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> busy_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // guards sleeping: generation_ changes under it
  std::condition_variable wake_;
  std::condition_variable done_;  // the caller sleeps on it when workers are slow
};

}  // namespace specd::cpu
