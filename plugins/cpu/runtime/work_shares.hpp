// Units of work (matmul column granules, attention rows or blocks of rows) handed out to the
// threads of a pool run by stealing. Each task owns one equal, contiguous share of the units
// and claims it from the front in halving pieces, so that a thread walks its data in order
// (the hardware prefetcher's stream restarts only a few times, a head's keys stay in L1). A
// task whose share is done takes half of what is left at the back of the share with the most
// left, and so on, so the threads finish together even when one core runs slower (a shared
// host whose other tenants take part of a core, a hybrid CPU) or a worker joins late or
// never: the caller then takes the absent worker's share. Kernels make a unit's result
// independent of the thread that computes it, so stealing never changes a bit.
//
// Thread rules: constructed by the device thread before ThreadPool::run (whose start
// publishes the shares to the workers); run_task is called from the run's tasks, one per
// share, on any thread. The shares live in the device thread's storage until its next
// WorkShares.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/thread_pool.hpp"

namespace specd::cpu {

class WorkShares {
 public:
  // `units` units in `tasks` shares; pieces have at least `min_piece` units where there are.
  WorkShares(int64_t units, int tasks, int64_t min_piece) : tasks_(tasks), min_piece_(min_piece) {
    if (units < 0 || units > int64_t{0x7fffffff})
      throw std::length_error("cpu: " + std::to_string(units) + " units of work in one run");
    thread_local std::vector<Share> storage;
    if (static_cast<int>(storage.size()) < tasks) storage = std::vector<Share>(tasks);
    shares_ = storage.data();
    for (int t = 0; t < tasks; ++t) shares_[t].pack(units * t / tasks, units * (t + 1) / tasks);
  }

  int tasks() const { return tasks_; }

  // Calls work(u0, u1) for every piece [u0, u1) that task t claims: its own share's, then
  // stolen ones, until no share has units left.
  template <class F>
  void run_task(int t, F&& work) {
    int64_t u0 = 0, u1 = 0;
    while (claim(shares_[t], false, u0, u1)) work(u0, u1);
    for (;;) {
      Share* victim = nullptr;
      int64_t most = 0;
      for (int v = 0; v < tasks_; ++v) {
        const int64_t left = shares_[v].left();
        if (left > most) most = left, victim = &shares_[v];
      }
      if (!victim) return;
      if (claim(*victim, true, u0, u1)) work(u0, u1);
    }
  }

 private:
  // A share's unclaimed units [front, back), both in one word so that one CAS claims.
  struct alignas(64) Share {
    std::atomic<uint64_t> word{0};
    void pack(int64_t front, int64_t back) {
      word.store(static_cast<uint64_t>(back) << 32 | static_cast<uint64_t>(front),
                 std::memory_order_relaxed);
    }
    int64_t left() const {
      const uint64_t w = word.load(std::memory_order_relaxed);
      return static_cast<int64_t>(w >> 32) - static_cast<int64_t>(w & 0xffffffffu);
    }
  };

  // Claims the next piece of share s (half of what is left, at least min_piece_ units where
  // there are), from its front or its back; false when it is empty.
  bool claim(Share& s, bool from_back, int64_t& u0, int64_t& u1) const {
    uint64_t w = s.word.load(std::memory_order_relaxed);
    for (;;) {
      int64_t front = static_cast<int64_t>(w & 0xffffffffu), back = static_cast<int64_t>(w >> 32);
      if (front >= back) return false;
      const int64_t take = std::min(back - front, std::max(min_piece_, (back - front) / 2));
      u0 = from_back ? back - take : front;
      u1 = u0 + take;
      if (from_back)
        back = u0;
      else
        front = u1;
      if (s.word.compare_exchange_weak(
              w, static_cast<uint64_t>(back) << 32 | static_cast<uint64_t>(front),
              std::memory_order_relaxed))
        return true;
    }
  }

  int tasks_;
  int64_t min_piece_;
  Share* shares_;
};

// One pool run over `units` units in WorkShares, one share per thread: work(u0, u1) for every
// piece, on any thread. Called by the device thread, as ThreadPool::run.
template <class F>
void run_shared(ThreadPool& pool, int64_t units, int64_t min_piece, F&& work) {
  WorkShares shares(units, pool.size(), min_piece);
  pool.run(shares.tasks(), [&](int64_t t) { shares.run_task(static_cast<int>(t), work); });
}

}  // namespace specd::cpu
