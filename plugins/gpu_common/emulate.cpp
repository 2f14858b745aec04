// The emulated threads of a block are fibers (ucontext) run by one host thread: a barrier
// (__syncthreads, or a warp's shuffle) switches to the next fiber until every live participant
// has arrived. No OS threads and no spinning, so thousands of blocks run in seconds.
#include "emulate.hpp"

#include <ucontext.h>

#include <memory>
#include <vector>

namespace specd::gpu::emu {
namespace {

constexpr unsigned kWarp = 32;
constexpr size_t kStackBytes = 128 * 1024;

struct Barrier {
  unsigned expected = 0;
  unsigned arrived = 0;
  uint64_t generation = 0;
};

struct Fiber {
  ucontext_t context;
  ThreadContext thread;
  bool done = false;
};

struct Block {
  std::vector<Fiber> fibers;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<float> lanes;  // one shuffle slot per thread
  std::vector<unsigned char> shared;
  ucontext_t scheduler;
  const std::function<void()>* body = nullptr;
};

Block* g_block = nullptr;
Fiber* g_fiber = nullptr;
std::vector<std::unique_ptr<char[]>> g_stacks;  // reused across launches

unsigned linear_thread() {
  const dim3& t = g_fiber->thread.thread_idx;
  const dim3& b = g_fiber->thread.block_dim;
  return t.x + b.x * (t.y + b.y * t.z);
}

void yield() { swapcontext(&g_fiber->context, &g_block->scheduler); }

void wait(Barrier& b) {
  const uint64_t generation = b.generation;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == generation) yield();
}

// An exited thread no longer takes part in barriers, as on a GPU.
void drop(Barrier& b) {
  --b.expected;
  if (b.arrived > 0 && b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
  }
}

void entry() {
  (*g_block->body)();
  g_fiber->done = true;
  const unsigned tid = linear_thread();
  drop(g_block->block);
  drop(g_block->warps[tid / kWarp]);
}  // returns to the scheduler through uc_link

}  // namespace

ThreadContext& ctx() { return g_fiber->thread; }

void sync_threads() { wait(g_block->block); }

float shfl_xor(float v, int mask) {
  const unsigned tid = linear_thread();
  const unsigned base = tid / kWarp * kWarp;
  Barrier& bar = g_block->warps[tid / kWarp];
  g_block->lanes[tid] = v;
  wait(bar);
  const float r = g_block->lanes[base + ((tid % kWarp) ^ static_cast<unsigned>(mask))];
  wait(bar);
  return r;
}

void run_grid(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body) {
  const unsigned n = block.x * block.y * block.z;
  while (g_stacks.size() < n) g_stacks.push_back(std::make_unique<char[]>(kStackBytes));
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        Block b;
        b.body = &body;
        b.fibers.resize(n);
        b.block.expected = n;
        for (unsigned w = 0; w * kWarp < n; ++w) {
          Barrier bar;
          bar.expected = n - w * kWarp < kWarp ? n - w * kWarp : kWarp;
          b.warps.push_back(bar);
        }
        b.lanes.assign(((n + kWarp - 1) / kWarp) * kWarp, 0.0f);
        b.shared.assign(shared_bytes + 16, 0);
        g_block = &b;
        for (unsigned t = 0; t < n; ++t) {
          Fiber& f = b.fibers[t];
          f.thread.thread_idx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
          f.thread.block_idx = dim3(bx, by, bz);
          f.thread.block_dim = block;
          f.thread.grid_dim = grid;
          f.thread.dynamic_shared = b.shared.data();
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = g_stacks[t].get();
          f.context.uc_stack.ss_size = kStackBytes;
          f.context.uc_link = &b.scheduler;
          makecontext(&f.context, entry, 0);
        }
        unsigned left = n;
        while (left > 0) {
          for (Fiber& f : b.fibers) {
            if (f.done) continue;
            g_fiber = &f;
            swapcontext(&b.scheduler, &f.context);
            if (f.done) --left;
          }
        }
        g_block = nullptr;
        g_fiber = nullptr;
      }
}

}  // namespace specd::gpu::emu
