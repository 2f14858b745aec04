// A fixed set of worker threads that run the tasks of one op. The caller thread takes part;
// tasks are handed out dynamically, so which thread runs a task never matters: kernels make
// each task's result independent of the thread that computes it.
//
// A worker takes part in a run only if it joins before the caller has finished handing out
// the tasks; the caller then waits for the workers that joined, never for one that the
// operating system has not scheduled yet. On a machine busier than it has cores, a run thus
// costs at worst the caller's own time, not a wait for another thread's turn on a core.
//
// Thread rules: run() is called by one thread at a time (the device's); the workers are the
// pool's own. Destruction waits for the workers to exit.
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
  // The run's generation (high 32 bits), whether it is closed to joining (bit 31) and how
  // many workers have joined it and not finished (the low bits).
  std::atomic<uint64_t> state_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // guards sleeping: a new generation and the last worker out under it
  std::condition_variable wake_;
  std::condition_variable done_;  // the caller sleeps on it when joined workers are slow
};

}  // namespace specd::cpu
