// Topology (hwloc discovery and thread binding) and the Runtime's choice of cores.

#include <switchyard/runtime.hpp>
#include <switchyard/topology.hpp>

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "test_support.hpp"

namespace {

using namespace switchyard;

TEST(Topology, AllowedCoresAreNonEmptyAndConsistent) {
  Topology topo;
  const auto& cores = topo.allowed_cores();
  ASSERT_FALSE(cores.empty());
  std::set<int> seen;
  for (const auto& c : cores) {
    EXPECT_GE(c.os_index, 0);
    EXPECT_GE(c.core, 0) << "cpu " << c.os_index << " has no physical core";
    EXPECT_GE(c.package, 0) << "cpu " << c.os_index << " has no package";
    EXPECT_TRUE(seen.insert(c.os_index).second) << "cpu " << c.os_index << " listed twice";
    const CoreInfo* found = topo.find(c.os_index);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->os_index, c.os_index);
  }
  EXPECT_TRUE(std::is_sorted(cores.begin(), cores.end(), [](const CoreInfo& a, const CoreInfo& b) {
    return a.os_index < b.os_index;
  })) << "allowed cores are in OS order";
  EXPECT_EQ(topo.find(-1), nullptr);
  EXPECT_EQ(topo.find(1 << 20), nullptr);
}

TEST(Topology, AllowedCoresMatchTheSchedulerAffinity) {
  Topology topo;
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::set<int> affinity;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) affinity.insert(i);
  }
  std::set<int> allowed;
  for (const auto& c : topo.allowed_cores()) allowed.insert(c.os_index);
  for (int c : allowed) EXPECT_TRUE(affinity.count(c)) << "cpu " << c << " is not in this process's affinity mask";
}

TEST(Topology, BindingAThreadWorks) {
  Topology topo;
  for (const auto& c : topo.allowed_cores()) {
    bool bound = false;
    std::string binding;
    int last = -2, sched_cpu = -2;
    std::thread t([&] {
      bound = topo.bind_this_thread(c.os_index);
      binding = topo.thread_binding(pthread_self());
      sched_yield();
      last = topo.this_thread_last_cpu();
      sched_cpu = sched_getcpu();
    });
    t.join();
    ASSERT_TRUE(bound) << "binding to cpu " << c.os_index << " refused";
    EXPECT_EQ(binding, std::to_string(c.os_index));
    EXPECT_EQ(last, c.os_index);
    EXPECT_EQ(sched_cpu, c.os_index);
  }
}

TEST(Topology, DescribeMentionsTheCores) {
  Topology topo;
  const std::string d = topo.describe();
  EXPECT_NE(d.find("machine:"), std::string::npos) << d;
  EXPECT_NE(d.find("core(s)"), std::string::npos) << d;
  for (const auto& c : topo.allowed_cores()) {
    EXPECT_NE(d.find("cpu " + std::to_string(c.os_index) + " -> core " + std::to_string(c.core)), std::string::npos)
        << d;
  }
}

// A core's L2 as hwloc reports it, as `describe` prints it (0: none reported).
TEST(Topology, PrivateCacheIsTheL2ThatDescribeShows) {
  Topology topo;
  const std::uint64_t bytes = topo.private_cache_bytes();
  const std::string d = topo.describe();
  if (bytes == 0) {
    EXPECT_EQ(d.find(" x L2 of "), std::string::npos) << d;
  } else {
    EXPECT_NE(d.find(" x L2 of " + std::to_string(bytes / 1024) + " KiB"), std::string::npos) << d;
  }
}

TEST(RuntimeCores, DefaultUsesEveryAllowedCore) {
  Runtime rt;
  std::vector<int> want;
  for (const auto& c : rt.topology().allowed_cores()) want.push_back(c.os_index);
  EXPECT_EQ(rt.cores(), want);
  const auto bindings = rt.worker_bindings();
  ASSERT_EQ(bindings.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NE(bindings[i].find("core " + std::to_string(want[i])), std::string::npos) << bindings[i];
    // Exactly that CPU, read back from the OS right after construction: a worker
    // must not be reported (or run) unbound.
    const std::string suffix = "bound to CPU set " + std::to_string(want[i]);
    EXPECT_TRUE(bindings[i].size() >= suffix.size() &&
                bindings[i].compare(bindings[i].size() - suffix.size(), suffix.size(), suffix) == 0)
        << bindings[i];
  }
}

TEST(RuntimeCores, BindingsAfterAJob) {
  Runtime rt;
  rt.run(2, [](Process& p) -> Task<void> { co_await p.barrier(); });
  const auto bindings = rt.worker_bindings();
  ASSERT_EQ(bindings.size(), rt.cores().size());
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    const std::string suffix = "bound to CPU set " + std::to_string(rt.cores()[i]);
    EXPECT_TRUE(bindings[i].size() >= suffix.size() &&
                bindings[i].compare(bindings[i].size() - suffix.size(), suffix.size(), suffix) == 0)
        << bindings[i];
  }
}

TEST(RuntimeCores, ExplicitCoresList) {
  Topology topo;
  const auto& allowed = topo.allowed_cores();
  for (const auto& c : allowed) {
    Runtime rt(RuntimeOptions{.cores = {c.os_index}});
    ASSERT_EQ(rt.cores(), std::vector<int>{c.os_index});
    std::vector<int> core_of(50, -1), cpu_of(50, -1);
    rt.run(50, [&](Process& p) -> Task<void> {
      core_of[p.rank()] = p.core();
      cpu_of[p.rank()] = sched_getcpu();
      co_await p.barrier();
    });
    for (int r = 0; r < 50; ++r) {
      EXPECT_EQ(core_of[r], c.os_index) << "rank " << r;
      EXPECT_EQ(cpu_of[r], c.os_index) << "rank " << r << " ran on another CPU than its bound worker";
    }
  }
  if (allowed.size() >= 2) {
    // Order given is the worker order: reversed list, reversed workers.
    const int a = allowed[0].os_index, b = allowed[1].os_index;
    Runtime rt(RuntimeOptions{.cores = {b, a}});
    EXPECT_EQ(rt.cores(), (std::vector<int>{b, a}));
    std::vector<int> core_of(4, -1);
    const auto body = [&](Process& p) -> Task<void> {
      core_of[p.rank()] = p.core();
      co_return;
    };
    rt.run(4, body);
    EXPECT_EQ(core_of, (std::vector<int>{b, b, a, a})) << "blocks (the default) follow the cores list";
    RunOptions spread;
    spread.placement = Placement::round_robin();
    rt.run(4, body, spread);
    EXPECT_EQ(core_of, (std::vector<int>{b, a, b, a})) << "round robin follows the cores list";
  }
}

TEST(RuntimeCores, UnboundWorkersStillRun) {
  Runtime rt(RuntimeOptions{.cores = {}, .bind = false});
  std::atomic<int> ran{0};
  rt.run(10, [&](Process& p) -> Task<void> {
    co_await p.barrier();
    ran.fetch_add(1);
  });
  EXPECT_EQ(ran.load(), 10);
}

TEST(RuntimeCores, BadCoreIsInvalidArgument) {
  Topology topo;
  int max_allowed = 0;
  for (const auto& c : topo.allowed_cores()) max_allowed = std::max(max_allowed, c.os_index);
  for (int bad : {-1, max_allowed + 1, 100000}) {
    try {
      Runtime rt(RuntimeOptions{.cores = {bad}});
      ADD_FAILURE() << "core " << bad << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("core " + std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  // A good core next to a bad one is still rejected.
  EXPECT_THROW(Runtime(RuntimeOptions{.cores = {topo.allowed_cores()[0].os_index, -5}}), InvalidArgument);
}

TEST(RuntimeCores, DuplicateCoreIsInvalidArgument) {
  Topology topo;
  const int c = topo.allowed_cores()[0].os_index;
  EXPECT_THROW(Runtime(RuntimeOptions{.cores = {c, c}}), InvalidArgument);
}

TEST(RuntimeCores, InvalidArgumentIsASwitchyardError) { EXPECT_THROW(Runtime(RuntimeOptions{.cores = {-1}}), Error); }

}  // namespace
