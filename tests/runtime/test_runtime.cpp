// The Runtime as a whole: many jobs in a row (side by side: test_jobs.cpp), option
// validation, yield scheduling, statistics, and idle workers that cost no CPU.

#include <switchyard/runtime.hpp>
#include <switchyard/span_timer.hpp>

#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace std::chrono_literals;

// A small job that checks itself: a ring exchange and an allreduce.
void ring_job(Runtime& rt, std::uint64_t n, RunOptions opts, std::uint64_t salt) {
  std::atomic<std::uint64_t> ok{0};
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank N = p.size(), me = p.rank();
        const Rank next = (me + 1) % N, prev = (me + N - 1) % N;
        const auto out = sytest::pattern((me * 131 + salt) % 3000, sytest::message_key(me, next, salt));
        SendTicket t = p.post_send(next, out);
        Message m = co_await p.recv(prev);
        SY_CHECK(m.size() == (prev * 131 + salt) % 3000 &&
                     sytest::first_mismatch(m.bytes(), sytest::message_key(prev, me, salt)) == std::string::npos,
                 "ring payload in job " << salt);
        co_await p.wait(t);
        const std::int64_t v = me;
        auto s = co_await p.allreduce(std::span(&v, 1));
        SY_CHECK(s[0] == static_cast<std::int64_t>(N) * (N - 1) / 2, "allreduce in job " << salt);
        ok.fetch_add(1);
      },
      std::move(opts));
  ASSERT_EQ(ok.load(), n) << "job " << salt;
}

TEST(Runtime, ManyJobsInSequence) {
  Runtime rt;
  for (std::uint64_t j = 0; j < 300; ++j) {
    RunOptions opts;
    opts.ring_capacity = j % 4 == 0 ? 1 : 1024;
    opts.eager_limit = j % 3 == 0 ? 64 : 1024;
    opts.placement = j % 2 ? Placement::round_robin() : Placement::block();
    ring_job(rt, 1 + (j * 37) % 100, opts, j);
    if (HasFatalFailure()) return;
  }
}

TEST(Runtime, ManyRuntimesCreatedAndDestroyed) {
  for (int i = 0; i < 20; ++i) {
    Runtime rt;
    if (i % 2) ring_job(rt, 8, {}, i);
  }
}

TEST(Runtime, InvalidRunOptionsRejected) {
  Runtime rt;
  std::atomic<bool> ran{false};  // written by processes on both cores
  auto body = [&](Process&) -> Task<void> {
    ran = true;
    co_return;
  };
  auto expect_invalid = [&](std::uint64_t n, RunOptions o, const char* what) {
    try {
      rt.run(n, body, std::move(o));
      ADD_FAILURE() << what << " accepted";
    } catch (const InvalidArgument&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": wrong exception " << e.what();
    }
  };
  expect_invalid(0, {}, "0 processes");
  expect_invalid(std::uint64_t{1} << 40, {}, "2^40 processes");
  expect_invalid(kAnySource, {}, "kAnySource processes");
  RunOptions o;
  o.ring_capacity = 0;
  expect_invalid(2, o, "ring_capacity 0");
  o = {};
  o.ring_capacity = (std::size_t{1} << 24) + 1;
  expect_invalid(2, o, "ring_capacity 2^24+1");
  o = {};
  o.eager_limit = (std::uint64_t{1} << 20) + 1;
  expect_invalid(2, o, "eager_limit 1 MiB + 1");
  o = {};
  o.eager_limit = ~std::uint64_t{0};
  expect_invalid(2, o, "eager_limit 2^64-1");
  o = {};
  o.stall_timeout = 0ms;
  expect_invalid(2, o, "stall_timeout 0");
  o = {};
  o.stall_timeout = -5ms;
  expect_invalid(2, o, "negative stall_timeout");
  try {
    rt.run(2, ProcessBody{});
    ADD_FAILURE() << "empty body accepted";
  } catch (const InvalidArgument&) {
  }
  // More processes than the machine's memory holds: refused before any is made, at once.
  {
    const auto start = std::chrono::steady_clock::now();
    try {
      rt.run(std::uint64_t{4'000'000'000}, body);
      ADD_FAILURE() << "4e9 processes accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("needs about"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "the refusal came after the memory was touched";
  }
  // A body that returns an empty Task (a default-made one) is refused, not resumed through a null handle.
  try {
    rt.run(4, [](Process&) { return Task<void>{}; });
    ADD_FAILURE() << "a body returning an empty Task was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("empty Task"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ran.load()) << "a rejected job ran a process";

  // The limits themselves are accepted.
  o = {};
  o.eager_limit = std::uint64_t{1} << 20;
  o.ring_capacity = 1;
  rt.run(2, body, o);
  EXPECT_TRUE(ran.load());
  ring_job(rt, 4, o, 1);
}

// The outer job waits for the very worker that would run the inner one: an
// immediate error, never a hang.
TEST(Runtime, RunFromInsideAProcessIsRejected) {
  Runtime rt;
  try {
    rt.run(2, [&](Process& p) -> Task<void> {
      if (p.rank() == 1) rt.run(1, [](Process&) -> Task<void> { co_return; });
      co_return;
    });
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("run called from inside a process of the same Runtime"), std::string::npos)
        << e.what();
  }
  // A second Runtime may be used from inside a process.
  Runtime other(RuntimeOptions{{rt.cores().front()}, true});
  std::atomic<int> inner{0};
  rt.run(1, [&](Process&) -> Task<void> {
    other.run(3, [&](Process&) -> Task<void> {
      inner.fetch_add(1);
      co_return;
    });
    co_return;
  });
  EXPECT_EQ(inner.load(), 3);
}

TEST(Runtime, YieldInterleavesProcessesOfOneCore) {
  Runtime rt;
  for (int core : rt.cores()) {
    const int k = 5, rounds = 20;
    std::vector<int> log;  // only this core's thread writes it
    RunOptions opts;
    opts.placement = Placement::explicit_map(std::vector<int>(k, core));
    rt.run(
        k,
        [&](Process& p) -> Task<void> {
          for (int i = 0; i < rounds; ++i) {
            log.push_back(static_cast<int>(p.rank()));
            co_await p.yield();
          }
        },
        opts);
    ASSERT_EQ(log.size(), static_cast<std::size_t>(k * rounds));
    // Between two turns of one process every other process had a turn.
    for (std::size_t i = 0; i + k <= log.size(); ++i) {
      std::set<int> window(log.begin() + i, log.begin() + i + k);
      ASSERT_EQ(window.size(), static_cast<std::size_t>(k)) << "at position " << i;
    }
  }
}

TEST(Runtime, YieldingProcessDoesNotStarveAReceiver) {
  // One process spins with yield until a same-core peer has received a message
  // from the other core: yield must let both the peer and the rings progress.
  Runtime rt;
  const int a = rt.cores().front(), b = rt.cores().back();
  RunOptions opts;
  opts.placement = Placement::explicit_map({a, a, b});
  bool received = false;
  rt.run(
      3,
      [&](Process& p) -> Task<void> {
        if (p.rank() == 0) {
          while (!received) co_await p.yield();
        } else if (p.rank() == 1) {
          Message m = co_await p.recv(2);
          SY_CHECK(m.size() == 5000 && sytest::first_mismatch(m.bytes(), 11) == std::string::npos, "payload");
          received = true;
        } else {
          co_await p.send(1, sytest::pattern(5000, 11));
        }
      },
      opts);
  EXPECT_TRUE(received);
}

TEST(Runtime, JobStatistics) {
  Runtime rt;
  const int a = rt.cores().front(), b = rt.cores().back();
  RunOptions opts;
  opts.placement = Placement::explicit_map({a, b});
  opts.ring_capacity = 1;
  opts.eager_limit = 1024;  // the 1000-byte messages below travel in the ring
  auto body = [&](Process& p) -> Task<void> {
    const auto out = sytest::pattern(1000, 1);  // 17 packets
    if (p.rank() == 0) {
      std::vector<SendTicket> t;
      for (int i = 0; i < 20; ++i) t.push_back(p.post_send(1, out));
      for (auto& x : t) co_await p.wait(x);
    } else {
      for (int i = 0; i < 20; ++i) {
        Message m = co_await p.recv(0);
        SY_CHECK(m.size() == 1000 && sytest::first_mismatch(m.bytes(), 1) == std::string::npos, "payload");
      }
    }
  };
  const JobStats s = rt.run(2, body, opts);
  EXPECT_GE(s.resumes, 2u);
  if (a != b) {
    EXPECT_GE(s.slots, 20u * 17u) << "every packet of every message crossed cores";
    EXPECT_GT(s.ring_full, 0u) << "a one-slot ring must have been found full";
  }
  RunOptions local;
  local.placement = Placement::explicit_map({a, a});
  const JobStats l = rt.run(2, body, local);
  EXPECT_EQ(l.slots, 0u) << "nothing crosses cores in a one-core job";
  EXPECT_GE(l.resumes, 2u);
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST(Runtime, BlockedProcessesUseNoCpu) {
  // 1000 processes block in recv for good; the stall watchdog ends the job
  // after 1.5 s. Meanwhile the workers must sleep, not spin: the whole
  // process's CPU time stays far below the wall time.
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 1500ms;
  std::atomic<int> blocked{0};
  const double cpu0 = cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  try {
    rt.run(
        1000,
        [&](Process& p) -> Task<void> {
          blocked.fetch_add(1);
          (void)co_await p.recv((p.rank() + 1) % p.size(), 77);  // nobody sends tag 77
        },
        opts);
    ADD_FAILURE() << "the job did not stall";
  } catch (const StallError& e) {
    EXPECT_NE(std::string(e.what()).find("1000 process(es) blocked"), std::string::npos);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double cpu = cpu_seconds() - cpu0;
  EXPECT_EQ(blocked.load(), 1000);
  EXPECT_GE(wall, 1.4);
  EXPECT_LT(cpu, 0.3 * wall) << "CPU " << cpu << " s over " << wall << " s of wall time: idle workers spin";
  std::cout << "[ info ] blocked job: " << cpu << " s CPU over " << wall << " s wall\n";
}

TEST(Runtime, IdleRuntimeUsesNoCpu) {
  Runtime rt;
  ring_job(rt, 16, {}, 5);  // workers have run a job and gone back to sleep
  const double cpu0 = cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double cpu = cpu_seconds() - cpu0;
  EXPECT_LT(cpu, 0.3 * wall) << "CPU " << cpu << " s over " << wall << " s with no job";
}

// Frames, processes and collective frames of a job come from the frame cache
// and go back to it: the next job of the same shape takes no new memory.
// Jobs that end by an exception (a process throws while the others wait in a
// barrier, and are cancelled there) give theirs back as well.
TEST(Runtime, JobsReuseTheFramesOfEarlierJobs) {
  using detail::FrameCache;
  Runtime rt;
  const std::uint64_t n = sytest::kSanitized ? 4000 : 20000;
  const auto job = [&](bool throws) {
    rt.run(n, [&](Process& p) -> Task<void> {
      SY_CHECK(reinterpret_cast<std::uintptr_t>(&p) % 64 == 0, "process " << p.rank() << " on its own cache line");
      co_await p.barrier();
      if (throws && p.rank() == n / 2) throw std::runtime_error("rank fails after the barrier");
      co_await p.barrier();
    });
  };
  job(false);
  const std::size_t reserved = FrameCache::reserved_bytes();
  EXPECT_GE(reserved, n * 64) << "n processes and their frames";
  for (int k = 0; k < 8; ++k) {
    if (k % 2) {
      EXPECT_THROW(job(true), std::runtime_error);
    } else {
      job(false);
    }
  }
  // Which process runs when may differ between jobs, and with it how many
  // frames a worker holds at once; a frame of every process lost per job would
  // be 8 * n * 64 bytes, past this slack of a chunk (2 MiB) per thread.
  EXPECT_LE(FrameCache::reserved_bytes(), reserved + (rt.cores().size() + 1) * (std::size_t{2} << 20))
      << "jobs must give their frames back, thrown or not";
}

// A job's processes and main frames come back from the FrameCache at the
// addresses the previous job of the same shape gave them, rank by rank: in
// alternate layouts (rank order ascending, then descending) a lockstep ring
// shift ran 45 % slower in every other job.
TEST(Runtime, RepeatedJobsLayTheirProcessesOutAlike) {
  Runtime rt;
  constexpr Rank n = 64;
  const auto layout = [&] {
    std::vector<std::pair<const void*, const void*>> where(n);
    rt.run(n, [&](Process& p) -> Task<void> {
      int in_frame = 0;
      where[p.rank()] = {&p, &in_frame};
      co_await p.barrier();
    });
    return where;
  };
  layout();  // the first job carves fresh blocks; the ones after reuse them
  const auto first = layout();
  for (int k = 0; k < 3; ++k) EXPECT_EQ(layout(), first) << "job " << k + 2 << " after the one compared with";
}

// Each core's processes and main frames lie on pages no other core's share,
// even where the placement alternates cores rank by rank (round robin): made
// in rank order from one list, a page held processes of both cores, and the
// prefetchers of one core took the lines that the other core was writing.
TEST(Runtime, EachCoresProcessesAndFramesLieOnPagesOfTheirOwn) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  constexpr Rank n = 96;
  std::vector<std::pair<const void*, const void*>> where(n);
  std::vector<int> core(n);
  RunOptions options;
  options.placement = Placement::round_robin();
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        int in_frame = 0;
        where[p.rank()] = {&p, &in_frame};
        core[p.rank()] = p.core();
        co_await p.barrier();
        in_frame = 1;  // lives across the barrier: in the frame
      },
      options);
  std::map<std::uintptr_t, std::set<int>> cores_of_page;
  for (Rank r = 0; r < n; ++r) {
    const auto object = reinterpret_cast<std::uintptr_t>(where[r].first),
               frame = reinterpret_cast<std::uintptr_t>(where[r].second);
    for (const std::uintptr_t at : {object, object + sizeof(Process) - 1, frame})
      cores_of_page[at / 4096].insert(core[r]);
  }
  std::set<int> seen;
  for (const auto& [page, cores] : cores_of_page) {
    EXPECT_EQ(cores.size(), 1u) << "page " << page << " holds processes of several cores";
    seen.insert(cores.begin(), cores.end());
  }
  EXPECT_EQ(seen.size(), 2u) << "round robin puts processes on both cores";
}

// Threads that run a job each and end (std::async per job, say) leave their
// lanes, emptied, to the next ones: the memory stays what the jobs at once hold.
TEST(Runtime, JobsFromThreadsThatComeAndGoReuseTheirLanes) {
  using detail::FrameCache;
  Runtime rt;
  RunOptions options;
  options.placement = Placement::round_robin();
  const auto job_on_a_thread_of_its_own = [&] {
    std::thread([&] {
      rt.run(
          256, [](Process& p) -> Task<void> { co_await p.barrier(); }, options);
    }).join();
  };
  for (int k = 0; k < 2; ++k) job_on_a_thread_of_its_own();
  const std::size_t reserved = FrameCache::reserved_bytes();
  for (int k = 0; k < 40; ++k) job_on_a_thread_of_its_own();
  EXPECT_LE(FrameCache::reserved_bytes(), reserved + (std::size_t{2} << 20))
      << "forty threads, one after the other, must not each take slabs of their own";
}

// RuntimeOptions::realtime_priority (for the tails): the workers run
// under SCHED_FIFO, or the Runtime is refused with the reason; out of range
// is refused up front.
TEST(Runtime, RealtimeWorkersOrARefusalThatSaysWhy) {
  EXPECT_NE(sytest::invalid_argument_of([] {
              Runtime rt(RuntimeOptions{.realtime_priority = 100});
            }).find("realtime_priority 100 is outside 0..99"),
            std::string::npos);
  EXPECT_NE(sytest::invalid_argument_of([] { Runtime rt(RuntimeOptions{.realtime_priority = -1}); }).find("outside"),
            std::string::npos);
  try {
    Runtime rt(RuntimeOptions{.realtime_priority = 1});
    std::atomic<int> fifo{0};
    rt.run(4, [&](Process&) -> Task<void> {
      fifo += sched_getscheduler(0) == SCHED_FIFO;
      co_return;
    });
    EXPECT_EQ(fifo.load(), 4);
  } catch (const InvalidArgument& e) {  // a user without CAP_SYS_NICE: refused, saying why
    EXPECT_NE(std::string(e.what()).find("the OS refused SCHED_FIFO"), std::string::npos) << e.what();
  }
  Runtime normal;
  std::atomic<int> other{0};
  normal.run(2, [&](Process&) -> Task<void> {
    other += sched_getscheduler(0) == SCHED_OTHER;
    co_return;
  });
  EXPECT_EQ(other.load(), 2);
}

// Each process knows its core among the node's cores and how many of the
// job's processes that core runs, under an uneven placement too.
TEST(Runtime, ProcessesKnowTheirCoreAndItsShare) {
  Runtime rt;
  const auto cores = static_cast<std::uint32_t>(rt.cores().size());
  for (const Rank n : {1u, 5u, 7u}) {
    std::vector<std::uint32_t> core_of(n), share(n);
    rt.run(n, [&](Process& p) -> Task<void> {
      core_of[p.rank()] = p.core_index();
      share[p.rank()] = p.processes_on_core();
      co_return;
    });
    for (Rank r = 0; r < n; ++r) {
      ASSERT_LT(core_of[r], cores) << "rank " << r << " of " << n;
      const auto alike = std::count(core_of.begin(), core_of.end(), core_of[r]);
      EXPECT_EQ(share[r], static_cast<std::uint32_t>(alike)) << "rank " << r << " of " << n;
    }
  }
}

// A repetition's span runs from the first process to start to the last to
// end, whichever of a core's processes is slow. Repetition 0's slow process
// is the first of the core to start (a timer that kept a later start would
// miss its work); repetition 1's is the third, slow after its yield, when the
// first two have ended (a timer that kept an earlier end would miss it). All
// on one core: another core's early start would hide the first mistake.
TEST(SpanTimer, SpansFromTheFirstStartToTheLastEnd) {
  Runtime rt;
  constexpr Rank n = 5;
  SpanTimer timer(rt, 3);
  RunOptions one_core;
  one_core.placement = Placement::explicit_map(std::vector<int>(n, rt.cores().front()));
  auto hold_the_core = [] {
    const auto until = std::chrono::steady_clock::now() + 20ms;
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  std::uint32_t started[3] = {0, 0, 0};  // per repetition; one core's processes only
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        for (std::uint32_t rep = 0; rep < 3; ++rep) {
          co_await p.barrier();
          timer.start(rep, p);
          const std::uint32_t place = started[rep]++;
          if (rep == 0 && place == 0) hold_the_core();
          co_await p.yield();
          if (rep == 1 && place == 2) hold_the_core();
          timer.end(rep, p);
        }
      },
      one_core);
  const std::vector<double> ms = timer.milliseconds();
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_GE(ms[0], 20.0);
  EXPECT_GE(ms[1], 20.0);
  EXPECT_GT(ms[2], 0.0);
  for (const double v : ms) EXPECT_LT(v, 5000.0);
}

// A span that some of a core's processes never stamped would miss them: it is
// refused, saying which repetition and core.
TEST(SpanTimer, RefusesARepetitionNotEveryProcessStamped) {
  Runtime rt;
  SpanTimer timer(rt, 1);
  rt.run(4, [&](Process& p) -> Task<void> {
    timer.start(0, p);
    if (p.rank() != 3) timer.end(0, p);
    co_return;
  });
  try {
    (void)timer.milliseconds();
    FAIL() << "a repetition one process never ended was timed";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("repetition 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("started and"), std::string::npos) << e.what();
  }
}

}  // namespace
