// The CPU backend's thread pool (plugins/cpu/thread_pool.cpp): every task of a run exactly
// once, its writes visible to the caller when run() returns, whatever the number of threads
// and tasks, and the same when more pools run at once than the machine has cores (workers
// then often join a run late, or not at all, and the caller must neither wait for them nor
// let them into the next run early).
#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "../../plugins/cpu/thread_pool.hpp"

using specd::cpu::ThreadPool;

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
