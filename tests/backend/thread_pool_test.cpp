// The CPU backend's thread pool (plugins/cpu/runtime/thread_pool.cpp): every task of a run exactly
// once, its writes visible to the caller when run() returns, whatever the number of threads
// and tasks, and the same when more pools run at once than the machine has cores (workers
// then often join a run late, or not at all, and the caller must neither wait for them nor
// let them into the next run early). And the work shares handed out by stealing
// (plugins/cpu/runtime/work_shares.hpp): every unit once, a late task's share done by the others.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "runtime/thread_pool.hpp"
#include "runtime/work_shares.hpp"

using specd::cpu::ThreadPool;
using specd::cpu::WorkShares;

namespace {

// `runs` runs of random sizes up to max_tasks; false at the first task run other than once.
bool every_task_once(ThreadPool& pool, int runs, int max_tasks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> hits(max_tasks);  // plain ints: run() must publish the tasks' writes
  for (int r = 0; r < runs; ++r) {
    const int n = 1 + static_cast<int>(rng() % max_tasks);
    std::fill(hits.begin(), hits.end(), 0);
    pool.run(n, [&](int64_t t) {
      for (volatile int spin = 0; spin < 300;) spin = spin + 1;  // time for the others to join
      hits[t] += 1 + r % 3;
    });
    for (int t = 0; t < max_tasks; ++t)
      if (hits[t] != (t < n ? 1 + r % 3 : 0)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("cpu thread pool: every task exactly once, for any number of threads and tasks") {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    for (int max_tasks : {1, 2, 3, 7, 64, 1000}) {
      INFO("threads " << threads << ", up to " << max_tasks << " tasks");
      CHECK(every_task_once(pool, 300, max_tasks, uint32_t(threads * 1000 + max_tasks)));
    }
    pool.run(0, [](int64_t) { FAIL("a task of an empty run"); });
  }
}

TEST_CASE("cpu thread pool: correct when more pools run at once than there are cores") {
  const int pools = 2 * static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  std::atomic<int> failed{0};
  std::vector<std::thread> callers;
  for (int p = 0; p < pools; ++p)
    callers.emplace_back([p, &failed] {
      ThreadPool pool(3);
      if (!every_task_once(pool, 3000, 24, uint32_t(p))) failed.fetch_add(1);
    });
  for (auto& c : callers) c.join();
  CHECK(failed.load() == 0);
}

namespace {

// One run of `units` units through WorkShares on `pool`; pieces[u] counts how often unit u
// was handed out, by_task[t] how many units task t's thread computed. With late_first, task
// 0 (whichever thread runs it) waits before its first claim until the other tasks have
// computed every unit (at most 10 s), as a thread that another tenant's work holds back.
void share_out(ThreadPool& pool, int64_t units, int64_t min_piece, bool late_first,
               std::vector<int>& pieces, std::vector<int64_t>& by_task) {
  WorkShares shares(units, pool.size(), min_piece);
  pieces.assign(static_cast<size_t>(units), 0);
  by_task.assign(static_cast<size_t>(shares.tasks()), 0);
  std::atomic<int64_t> done{0};
  pool.run(shares.tasks(), [&](int64_t t) {
    if (late_first && t == 0) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (done.load() < units && std::chrono::steady_clock::now() < give_up)
        std::this_thread::yield();
    }
    shares.run_task(static_cast<int>(t), [&](int64_t u0, int64_t u1) {
      REQUIRE(u0 < u1);
      for (int64_t u = u0; u < u1; ++u) ++pieces[static_cast<size_t>(u)];
      by_task[static_cast<size_t>(t)] += u1 - u0;
      done.fetch_add(u1 - u0);
    });
  });
}

}  // namespace

TEST_CASE("cpu work shares: every unit exactly once, and a late task's share is taken over") {
  std::vector<int> pieces;
  std::vector<int64_t> by_task;
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t units : {0, 1, 2, 3, 17, 64, 1000}) {
      for (int64_t min_piece : {1, 2, 7}) {
        INFO("threads " << threads << ", units " << units << ", pieces of at least " << min_piece);
        share_out(pool, units, min_piece, false, pieces, by_task);
        CHECK(std::all_of(pieces.begin(), pieces.end(), [](int n) { return n == 1; }));
        int64_t total = 0;
        for (int64_t n : by_task) total += n;
        CHECK(total == units);
      }
    }
  }
  // Task 0 late: the other thread does its own share, then steals all of task 0's.
  ThreadPool pool(2);
  share_out(pool, 1000, 2, true, pieces, by_task);
  CHECK(std::all_of(pieces.begin(), pieces.end(), [](int n) { return n == 1; }));
  CHECK(by_task[0] == 0);
  CHECK(by_task[1] == 1000);
}
