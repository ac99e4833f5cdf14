// Placement: which worker (core) each rank goes to, and that a job honours it.

#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "test_support.hpp"

namespace {

using namespace switchyard;

TEST(Placement, RoundRobin) {
  const auto p = Placement::round_robin();
  EXPECT_EQ(p.kind(), Placement::Kind::kRoundRobin);
  EXPECT_EQ(p.name(), "round-robin");
  EXPECT_EQ(p.assign(5, {0, 1}), (std::vector<std::uint32_t>{0, 1, 0, 1, 0}));
  EXPECT_EQ(p.assign(7, {4, 2, 9}), (std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(p.assign(3, {5}), (std::vector<std::uint32_t>{0, 0, 0}));
  EXPECT_EQ(p.assign(1, {0, 1}), (std::vector<std::uint32_t>{0}));
  const auto big = p.assign(4096, {0, 1});
  for (std::uint32_t r = 0; r < 4096; ++r) ASSERT_EQ(big[r], r % 2);
}

TEST(Placement, Block) {
  const auto p = Placement::block();
  EXPECT_EQ(p.kind(), Placement::Kind::kBlock);
  EXPECT_EQ(p.name(), "block");
  EXPECT_EQ(p.assign(4, {0, 1}), (std::vector<std::uint32_t>{0, 0, 1, 1}));
  EXPECT_EQ(p.assign(5, {0, 1}), (std::vector<std::uint32_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(p.assign(1, {0, 1}), (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(p.assign(3, {7}), (std::vector<std::uint32_t>{0, 0, 0}));
  EXPECT_EQ(p.assign(7, {0, 1, 2}), (std::vector<std::uint32_t>{0, 0, 0, 1, 1, 1, 2}));
  // General properties: contiguous, non-decreasing, every worker index valid, sizes balanced.
  for (std::uint64_t n : {1u, 2u, 3u, 31u, 32u, 1000u, 1023u, 4096u}) {
    for (std::size_t c = 1; c <= 5; ++c) {
      std::vector<int> cores(c);
      for (std::size_t i = 0; i < c; ++i) cores[i] = static_cast<int>(i);
      const auto a = p.assign(n, cores);
      ASSERT_EQ(a.size(), n);
      std::vector<std::uint64_t> count(c, 0);
      for (std::uint64_t r = 0; r < n; ++r) {
        ASSERT_LT(a[r], c);
        if (r) {
          ASSERT_LE(a[r - 1], a[r]) << "block placement is contiguous";
        }
        ++count[a[r]];
      }
      const std::uint64_t per = (n + c - 1) / c;
      for (std::size_t i = 0; i < c; ++i) ASSERT_LE(count[i], per);
    }
  }
}

TEST(Placement, ExplicitMap) {
  const auto p = Placement::explicit_map({1, 0, 1, 1});
  EXPECT_EQ(p.kind(), Placement::Kind::kExplicit);
  EXPECT_EQ(p.name(), "explicit");
  // Worker index is the position of the OS core in the runtime's cores list.
  EXPECT_EQ(p.assign(4, {0, 1}), (std::vector<std::uint32_t>{1, 0, 1, 1}));
  EXPECT_EQ(p.assign(4, {1, 0}), (std::vector<std::uint32_t>{0, 1, 0, 0}));
  EXPECT_EQ(Placement::explicit_map({6, 6}).assign(2, {3, 6}), (std::vector<std::uint32_t>{1, 1}));
}

TEST(Placement, BadExplicitMapsRejected) {
  // Too short, too long.
  EXPECT_THROW(Placement::explicit_map({0, 1}).assign(3, {0, 1}), InvalidArgument);
  EXPECT_THROW(Placement::explicit_map({0, 1, 0, 1}).assign(3, {0, 1}), InvalidArgument);
  EXPECT_THROW(Placement::explicit_map({}).assign(1, {0, 1}), InvalidArgument);
  // A core without a worker: the message names the rank and the core.
  try {
    Placement::explicit_map({0, 1, 7, 0}).assign(4, {0, 1});
    ADD_FAILURE() << "core 7 accepted";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 2"), std::string::npos) << what;
    EXPECT_NE(what.find("core 7"), std::string::npos) << what;
  }
  EXPECT_THROW(Placement::explicit_map({-1}).assign(1, {0, 1}), InvalidArgument);
}

// Runs a job and records, per rank, p.core(), the CPU it ran on and its thread.
struct Observed {
  std::vector<int> core, cpu;
  std::vector<std::thread::id> thread;
};

Observed observe(Runtime& rt, std::uint64_t n, Placement placement) {
  Observed o{std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<std::thread::id>(n)};
  RunOptions opts;
  opts.placement = std::move(placement);
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        o.core[p.rank()] = p.core();
        o.cpu[p.rank()] = sched_getcpu();
        o.thread[p.rank()] = std::this_thread::get_id();
        co_await p.barrier();
        // Still on the same core and thread after blocking.
        SY_CHECK(p.core() == o.core[p.rank()], "core changed");
        SY_CHECK(std::this_thread::get_id() == o.thread[p.rank()], "rank " << p.rank() << " changed thread");
        SY_CHECK(sched_getcpu() == p.core(), "rank " << p.rank() << " on cpu " << sched_getcpu());
      },
      opts);
  return o;
}

void expect_matches(const Runtime& rt, const Observed& o, const std::vector<std::uint32_t>& workers) {
  std::map<int, std::thread::id> thread_of_core;
  for (std::size_t r = 0; r < workers.size(); ++r) {
    const int want = rt.cores()[workers[r]];
    ASSERT_EQ(o.core[r], want) << "rank " << r;
    ASSERT_EQ(o.cpu[r], want) << "rank " << r << " ran on another CPU";
    auto [it, fresh] = thread_of_core.emplace(want, o.thread[r]);
    ASSERT_EQ(it->second, o.thread[r]) << "two threads ran processes of core " << want;
  }
  std::set<std::thread::id> threads;
  for (auto& [core, id] : thread_of_core) threads.insert(id);
  EXPECT_EQ(threads.size(), thread_of_core.size()) << "one worker thread per core";
}

TEST(PlacementInJob, RoundRobinBlockAndExplicit) {
  Runtime rt;
  const auto& cores = rt.cores();
  for (std::uint64_t n : {1u, 2u, 3u, 33u, 1024u}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    expect_matches(rt, observe(rt, n, Placement::round_robin()), Placement::round_robin().assign(n, cores));
    expect_matches(rt, observe(rt, n, Placement::block()), Placement::block().assign(n, cores));
    std::vector<int> map(n);
    for (std::uint64_t r = 0; r < n; ++r) map[r] = cores[sytest::splitmix64(r) % cores.size()];
    const auto explicit_placement = Placement::explicit_map(map);
    const auto o = observe(rt, n, explicit_placement);
    for (std::uint64_t r = 0; r < n; ++r) ASSERT_EQ(o.core[r], map[r]) << "rank " << r;
    expect_matches(rt, o, explicit_placement.assign(n, cores));
  }
}

TEST(PlacementInJob, EverythingOnOneCore) {
  Runtime rt;
  for (int core : rt.cores()) {
    const auto o = observe(rt, 100, Placement::explicit_map(std::vector<int>(100, core)));
    for (int r = 0; r < 100; ++r) ASSERT_EQ(o.core[r], core);
  }
}

TEST(PlacementInJob, BadExplicitMapRejectedByRun) {
  Runtime rt;
  std::atomic<bool> ran{false};  // written by processes on both cores
  auto body = [&](Process&) -> Task<void> {
    ran = true;
    co_return;
  };
  RunOptions short_map;
  short_map.placement = Placement::explicit_map({rt.cores()[0]});
  EXPECT_THROW(rt.run(2, body, short_map), InvalidArgument);
  RunOptions bad_core;
  bad_core.placement = Placement::explicit_map({rt.cores()[0], 4242});
  EXPECT_THROW(rt.run(2, body, bad_core), InvalidArgument);
  EXPECT_FALSE(ran.load()) << "no process may run in a rejected job";
  // The runtime still works.
  RunOptions good;
  good.placement = Placement::explicit_map({rt.cores()[0], rt.cores().back()});
  rt.run(2, body, good);
  EXPECT_TRUE(ran.load());
}

TEST(PlacementInJob, RuntimeWithOneCoreRejectsTheOther) {
  Runtime probe;
  if (probe.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  const int a = probe.cores()[0], b = probe.cores()[1];
  Runtime rt(RuntimeOptions{.cores = {a}});
  RunOptions opts;
  opts.placement = Placement::explicit_map({a, b});
  EXPECT_THROW(rt.run(
                   2, [](Process&) -> Task<void> { co_return; }, opts),
               InvalidArgument);
}

}  // namespace
