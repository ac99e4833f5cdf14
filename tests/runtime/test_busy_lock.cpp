// BusyLock: mutual exclusion under contention, from plain threads and from
// software processes on every core. The protected counters are deliberately
// non-atomic: only the lock's acquire/release makes the count exact.

#include <switchyard/busy_lock.hpp>
#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace switchyard;

TEST(BusyLock, Layout) {
  EXPECT_EQ(sizeof(BusyLock), 64u);
  EXPECT_EQ(alignof(BusyLock), 64u);
  BusyLock locks[3];
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&locks[1]) - reinterpret_cast<std::uintptr_t>(&locks[0]), 64u);
}

TEST(BusyLock, SingleThreadSemantics) {
  BusyLock lock;
  EXPECT_FALSE(lock.held());
  EXPECT_TRUE(lock.try_acquire());
  EXPECT_TRUE(lock.held());
  EXPECT_FALSE(lock.try_acquire()) << "a held lock must not be acquired again";
  EXPECT_FALSE(lock.try_acquire());
  lock.release();
  EXPECT_FALSE(lock.held());
  EXPECT_TRUE(lock.try_acquire());
  lock.release();
}

struct Protected {
  long counter = 0;  // plain: races without the lock
  long shadow = 0;  // must always equal counter when the lock is free
  bool inside = false;
};

TEST(BusyLock, ThreadsIncrementExactly) {
  const int threads = 8;
  const long per_thread = sytest::kSanitized ? 20'000 : 200'000;
  BusyLock lock;
  Protected data;
  std::atomic<long> violations{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (long i = 0; i < per_thread; ++i) {
        while (!lock.try_acquire()) std::this_thread::yield();
        if (data.inside || data.counter != data.shadow) violations.fetch_add(1, std::memory_order_relaxed);
        data.inside = true;
        const long c = data.counter;
        data.counter = c + 1;
        data.shadow = data.shadow + 1;
        data.inside = false;
        lock.release();
      }
    });
  }
  for (auto& t : pool) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(data.counter, threads * per_thread);
  EXPECT_EQ(data.shadow, threads * per_thread);
  EXPECT_FALSE(lock.held());
}

TEST(BusyLock, ThreadsOnManyLocks) {
  // Neighbouring locks are independent: holding one never blocks another.
  const int threads = 6, locks_n = 3;
  const long per_thread = sytest::kSanitized ? 10'000 : 100'000;
  std::vector<BusyLock> locks(locks_n);
  std::vector<Protected> data(locks_n);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (long i = 0; i < per_thread; ++i) {
        const int k = static_cast<int>((t + i) % locks_n);
        while (!locks[k].try_acquire()) std::this_thread::yield();
        ++data[k].counter;
        locks[k].release();
      }
    });
  }
  for (auto& t : pool) t.join();
  long total = 0;
  for (auto& d : data) total += d.counter;
  EXPECT_EQ(total, threads * per_thread);
  for (int k = 0; k < locks_n; ++k) EXPECT_EQ(data[k].counter, threads * per_thread / locks_n) << "lock " << k;
}

// Processes on both cores hammer a few receivers' busy locks. The critical
// section spans a yield, so processes of the same core contend too.
void processes_increment(Runtime& rt, std::uint64_t n, int per_process, Placement placement) {
  const Rank locks_n = static_cast<Rank>(std::min<std::uint64_t>(n, 3));
  std::vector<Protected> data(locks_n);
  std::atomic<long> violations{0};
  RunOptions opts;
  opts.placement = placement;
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        for (int i = 0; i < per_process; ++i) {
          const Rank k = static_cast<Rank>((p.rank() + i) % locks_n);
          BusyLock& lock = p.busy_lock(k);
          while (!lock.try_acquire()) co_await p.yield();
          Protected& d = data[k];
          if (d.inside || d.counter != d.shadow) violations.fetch_add(1, std::memory_order_relaxed);
          d.inside = true;
          const long c = d.counter;
          if (i % 2 == 0) co_await p.yield();  // hold the lock across a switch
          d.counter = c + 1;
          d.shadow = d.shadow + 1;
          d.inside = false;
          lock.release();
        }
      },
      opts);
  EXPECT_EQ(violations.load(), 0);
  long total = 0;
  for (Rank k = 0; k < locks_n; ++k) {
    total += data[k].counter;
    EXPECT_EQ(data[k].counter, data[k].shadow);
  }
  EXPECT_EQ(total, static_cast<long>(n) * per_process);
}

TEST(BusyLock, ProcessesIncrementExactly) {
  Runtime rt;
  processes_increment(rt, 2, 5000, Placement::round_robin());
  processes_increment(rt, 32, 500, Placement::round_robin());
  processes_increment(rt, 1024, 20, Placement::round_robin());
  processes_increment(rt, 1024, 20, Placement::block());
}

TEST(BusyLock, ProcessesAndForeignThreadsShareALock) {
  // A BusyLock is operated on directly by anyone: a plain thread outside the
  // runtime contends with processes on both cores.
  Runtime rt;
  const long per_thread = sytest::kSanitized ? 5'000 : 50'000;
  const int per_process = 50;
  const std::uint64_t n = 64;
  long counter = 0;
  std::atomic<BusyLock*> shared{nullptr};
  std::atomic<bool> thread_done{false};
  std::thread outsider;
  rt.run(n, [&](Process& p) -> Task<void> {
    if (p.rank() == 0) {
      shared.store(&p.busy_lock(0));
      outsider = std::thread([&] {
        BusyLock* lock = shared.load();
        for (long i = 0; i < per_thread; ++i) {
          while (!lock->try_acquire()) std::this_thread::yield();
          ++counter;
          lock->release();
        }
        thread_done.store(true);
      });
    }
    co_await p.barrier();
    BusyLock& lock = p.busy_lock(0);
    for (int i = 0; i < per_process; ++i) {
      while (!lock.try_acquire()) co_await p.yield();
      const long c = counter;
      co_await p.yield();
      counter = c + 1;
      lock.release();
    }
    // Keep the job (and so the lock) alive until the outsider has finished.
    while (!thread_done.load()) co_await p.yield();
  });
  outsider.join();
  EXPECT_EQ(counter, static_cast<long>(n) * per_process + per_thread);
}

TEST(BusyLock, BusyLockRankOutOfRangeIsInvalidArgument) {
  Runtime rt;
  EXPECT_THROW(rt.run(4,
                      [](Process& p) -> Task<void> {
                        (void)p.busy_lock(p.size());
                        co_return;
                      }),
               InvalidArgument);
}

}  // namespace
