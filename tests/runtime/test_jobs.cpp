// Jobs side by side: run() called from several host threads at once runs the
// jobs at once on the same workers. Each job keeps its own world,
// statistics, failure and cancellation: one job's failure leaves the other
// running, and two jobs failing at once on crossed cores both end.
// Submitted jobs and their handles (wait, poll, cancel), RunOptions::stop,
// and the SIGINT recipe of docs/embedding.md: a stopped job's processes are
// woken wherever they wait, and the Runtime runs the next job as before.

#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace std::chrono_literals;

struct Boom : std::logic_error {
  explicit Boom(const std::string& what) : std::logic_error(what) {}
};

// Long enough for any loaded machine, short enough that serialised jobs fail the test rather than hang it.
constexpr auto kMeetWithin = 10s;

// What one run() returned or threw.
struct Outcome {
  std::optional<JobStats> stats;
  std::exception_ptr error;
  std::string what() const {
    if (!error) return "no error";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "a non-standard exception";
    }
  }
};

// Each of `jobs` on a host thread of its own, all at once.
std::vector<Outcome> side_by_side(const std::vector<std::function<JobStats()>>& jobs) {
  std::vector<Outcome> out(jobs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        out[i].stats = jobs[i]();
      } catch (...) {
        out[i].error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Sleeps (no CPU) until `flag` is set, at most kMeetWithin; whether it was.
Task<bool> until_set(Process& p, const std::atomic<bool>& flag) {
  const auto until = Process::Clock::now() + kMeetWithin;
  while (!flag.load()) {
    if (Process::Clock::now() > until) co_return false;
    co_await p.sleep_for(1ms);
  }
  co_return true;
}

// Every process of each job waits until the other job has started: only jobs
// that run at once get past it. Each job's world is its own: its size, and
// allreduce over its own processes.
TEST(JobsSideBySide, RunAtOnceEachInItsOwnWorld) {
  Runtime rt;
  std::atomic<bool> started[2] = {false, false};
  const Rank sizes[2] = {6, 9};
  auto job = [&](int id) {
    return [&, id] {
      return rt.run(sizes[id], [&, id](Process& p) -> Task<void> {
        started[id] = true;
        SY_CHECK(co_await until_set(p, started[1 - id]), "job " << id << " never saw the other job start");
        SY_CHECK(p.size() == sizes[id], "world of " << p.size());
        for (int round = 0; round < 20; ++round) {
          const std::int64_t mine[2] = {1, static_cast<std::int64_t>(p.rank())};
          const auto sum = co_await p.allreduce(mine);
          const auto n = static_cast<std::int64_t>(sizes[id]);
          SY_CHECK(sum[0] == n && sum[1] == n * (n - 1) / 2, "allreduce " << sum[0] << ", " << sum[1]);
          co_await p.yield();
        }
      });
    };
  };
  const auto out = side_by_side({job(0), job(1)});
  for (const Outcome& o : out) EXPECT_FALSE(o.error) << o.what();
  ASSERT_TRUE(out[0].stats && out[1].stats);
  EXPECT_NE(out[0].stats->job, out[1].stats->job);
}

// One job's statistics count its own processes only, though another job
// switches processes on the same cores all the while.
TEST(JobsSideBySide, StatisticsAreEachJobsOwn) {
  Runtime rt;
  std::atomic<bool> busy_started{false}, counted_over{false};
  constexpr Rank kCounted = 4;
  constexpr int kYields = 50;
  auto busy = [&] {
    return rt.run(8, [&](Process& p) -> Task<void> {
      busy_started = true;
      const auto until = Process::Clock::now() + kMeetWithin;
      while (!counted_over.load() && Process::Clock::now() < until) co_await p.yield();
    });
  };
  auto counted = [&] {
    const auto until = std::chrono::steady_clock::now() + kMeetWithin;
    while (!busy_started.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    JobStats stats = rt.run(kCounted, [&](Process& p) -> Task<void> {
      for (int k = 0; k < kYields; ++k) co_await p.yield();
    });
    counted_over = true;
    return stats;
  };
  const auto out = side_by_side({busy, counted});
  for (const Outcome& o : out) ASSERT_FALSE(o.error) << o.what();
  EXPECT_EQ(out[1].stats->resumes, kCounted * (kYields + 1));  // first resume, then one per yield
  EXPECT_GT(out[0].stats->resumes, out[1].stats->resumes);
}

// One job fails (one process throws while the others wait in a receive that
// never comes and in a barrier); the other, running all the while, goes on
// after that run() has thrown and ends normally.
TEST(JobsSideBySide, OneJobsFailureLeavesTheOtherRunning) {
  Runtime rt;
  std::atomic<bool> started[2] = {false, false};
  std::atomic<bool> failed_job_over{false};
  auto failing = [&] {
    try {
      rt.run(8, [&](Process& p) -> Task<void> {
        started[0] = true;
        SY_CHECK(co_await until_set(p, started[1]), "the other job never started");
        if (p.rank() == 5) throw Boom("rank 5 fails");
        if (p.rank() % 2) (void)co_await p.recv(0, 99);  // never sent
        co_await p.barrier();  // rank 5 never arrives
      });
    } catch (...) {
      failed_job_over = true;
      throw;
    }
    return JobStats{};
  };
  auto going_on = [&] {
    return rt.run(8, [&](Process& p) -> Task<void> {
      started[1] = true;
      SY_CHECK(co_await until_set(p, started[0]), "the other job never started");
      SY_CHECK(co_await until_set(p, failed_job_over), "the failing job never ended");
      for (int round = 0; round < 10; ++round) {
        const std::int64_t one = 1;
        const auto sum = co_await p.allreduce(std::span(&one, 1));
        SY_CHECK(sum[0] == 8, "allreduce after the other job failed: " << sum[0]);
        const Rank next = (p.rank() + 1) % p.size(), prev = (p.rank() + p.size() - 1) % p.size();
        const auto bytes = sytest::pattern(3000, sytest::message_key(p.rank(), next, round));
        SendTicket s = p.post_send(next, bytes, 7);
        sytest::check_message(co_await p.recv(prev, 7), prev, p.rank(), round, 3000, "ring");
        co_await p.wait(s);
      }
    });
  };
  const auto out = side_by_side({failing, going_on});
  ASSERT_TRUE(out[0].error);
  EXPECT_THROW(std::rethrow_exception(out[0].error), Boom);
  EXPECT_FALSE(out[1].error) << out[1].what();
}

// Several host threads, each running one job after another, every job's
// ring exchanges, barriers and reductions checked: the jobs start and end
// at any moment of the others'.
TEST(JobsSideBySide, ManyJobsFromSeveralThreads) {
  Runtime rt;
  constexpr int kThreads = 3, kJobsEach = 8;
  std::vector<std::function<JobStats()>> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.push_back([&rt, t] {
      JobStats last;
      for (int j = 0; j < kJobsEach; ++j) {
        const Rank n = static_cast<Rank>(4 + 13 * t + j);
        last = rt.run(n, [n](Process& p) -> Task<void> {
          const Rank next = (p.rank() + 1) % n, prev = (p.rank() + n - 1) % n;
          for (std::uint64_t round = 0; round < 5; ++round) {
            const auto bytes = sytest::pattern(100 + 700 * round, sytest::message_key(p.rank(), next, round));
            SendTicket s = p.post_send(next, bytes);
            sytest::check_message(co_await p.recv(prev), prev, p.rank(), round, 100 + 700 * round, "ring");
            co_await p.wait(s);
            co_await p.barrier();
            const std::int64_t mine = p.rank();
            const auto sum = co_await p.allreduce(std::span(&mine, 1));
            SY_CHECK(sum[0] == static_cast<std::int64_t>(n) * (n - 1) / 2, "allreduce " << sum[0]);
          }
        });
      }
      return last;
    });
  }
  for (const Outcome& o : side_by_side(clients)) EXPECT_FALSE(o.error) << o.what();
}

// Two jobs fail at the same moment on crossed cores, each with a single-copy
// send in flight (so each failing process waits, unwinding, until every
// worker of its job has stopped reading its buffer): job A's failing process
// runs on core 0 and waits for A's worker on core 1, while core 1 runs job
// B's failing process, which waits for B's worker on core 0. Both jobs end,
// each with its own error.
TEST(JobsSideBySide, TwoJobsFailingAtOnceOnCrossedCores) {
  const Topology topology;
  const auto& allowed = topology.allowed_cores();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two cores";
  Runtime rt(RuntimeOptions{{allowed[0].os_index, allowed[1].os_index}});
  const std::vector<std::byte> big[2] = {sytest::pattern(200'000, 1), sytest::pattern(200'000, 2)};
  std::atomic<int> arrived{0};
  auto job = [&](int id) {
    // Round robin: rank 0 on core 0, rank 1 on core 1. Job 0 fails on core 0, job 1 on core 1.
    return [&, id] {
      return rt.run(2, [&, id](Process& p) -> Task<void> {
        const Rank failing = static_cast<Rank>(id);
        if (p.rank() != failing) {
          (void)co_await p.recv(failing, 6);  // not the tag sent: the payload stays in its sender's buffer
          co_return;
        }
        SendTicket in_flight = p.post_send(1 - failing, big[id], 5);
        arrived.fetch_add(1);
        // Without yielding: the other job's failing process must be running on the other core now.
        const auto until = std::chrono::steady_clock::now() + kMeetWithin;
        while (arrived.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        SY_CHECK(arrived.load() == 2, "the other job's failing process never ran");
        throw Boom("job " + std::to_string(id));
      });
    };
  };
  const auto out = side_by_side({job(0), job(1)});
  for (int id = 0; id < 2; ++id) {
    ASSERT_TRUE(out[id].error);
    EXPECT_EQ(out[id].what(), "job " + std::to_string(id));
  }
}

// --- submit, the handle, stop ---

// Waits (on the test's thread, bounded) until `count` reaches `n`.
bool reaches(const std::atomic<int>& count, int n) {
  const auto until = std::chrono::steady_clock::now() + kMeetWithin;
  while (count.load() < n && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  return count.load() >= n;
}

// What a stopped job's run() throws: JobCancelled naming the stop.
void expect_stopped(const std::function<void()>& wait) {
  try {
    wait();
    ADD_FAILURE() << "the stopped job did not throw";
  } catch (const JobCancelled& e) {
    EXPECT_NE(std::string(e.what()).find("stopped from outside"), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a JobCancelled: " << e.what();
  }
}

// After a stopped job, the Runtime runs the next one as before.
void expect_usable(Runtime& rt) {
  const JobStats stats = rt.run(16, [](Process& p) -> Task<void> {
    const std::int64_t one = 1;
    const auto sum = co_await p.allreduce(std::span(&one, 1));
    SY_CHECK(sum[0] == 16, "allreduce " << sum[0]);
  });
  EXPECT_GT(stats.resumes, 0u);
}

// A generous stall timeout: a stopped job must end by the stop, not by the watchdog.
RunOptions patient() {
  RunOptions o;
  o.stall_timeout = std::chrono::minutes(10);
  return o;
}

TEST(JobHandles, WaitPollAndResult) {
  Runtime rt;
  std::atomic<bool> go{false};
  JobHandle h = rt.submit(8, [&](Process& p) -> Task<void> {
    SY_CHECK(co_await until_set(p, go), "never let go");
    const Rank next = (p.rank() + 1) % 8, prev = (p.rank() + 7) % 8;
    const auto bytes = sytest::pattern(5000, sytest::message_key(p.rank(), next, 0));
    SendTicket s = p.post_send(next, bytes);
    sytest::check_message(co_await p.recv(prev), prev, p.rank(), 0, 5000, "ring");
    co_await p.wait(s);
  });
  EXPECT_TRUE(h.valid());
  EXPECT_FALSE(h.ready());
  EXPECT_FALSE(h.wait_for(20ms));
  go = true;
  EXPECT_TRUE(h.wait_for(kMeetWithin));
  EXPECT_TRUE(h.ready());
  const JobStats stats = h.wait();
  EXPECT_GE(stats.resumes, 8u);
  EXPECT_FALSE(h.valid());
  EXPECT_FALSE(h.ready());
  EXPECT_THROW(h.wait(), InvalidArgument);
  EXPECT_THROW(JobHandle().wait(), InvalidArgument);
}

TEST(JobHandles, WaitRethrowsTheJobsError) {
  Runtime rt;
  JobHandle h = rt.submit(4, [](Process& p) -> Task<void> {
    if (p.rank() == 2) throw Boom("rank 2");
    co_await p.barrier();
  });
  EXPECT_THROW(h.wait(), Boom);
  JobHandle refused = rt.submit(0, [](Process&) -> Task<void> { co_return; });
  EXPECT_THROW(refused.wait(), InvalidArgument);
}

// Every process blocked in a receive of a message never sent.
TEST(JobHandles, CancelWakesReceives) {
  Runtime rt;
  std::atomic<int> blocked{0};
  JobHandle h = rt.submit(
      8,
      [&](Process& p) -> Task<void> {
        blocked.fetch_add(1);
        (void)co_await p.recv(kAnySource, 5);
      },
      patient());
  ASSERT_TRUE(reaches(blocked, 8));
  h.cancel();
  EXPECT_TRUE(h.wait_for(kMeetWithin));
  expect_stopped([&] { h.wait(); });
  expect_usable(rt);
}

// Processes in a barrier that rank 0 never reaches (it sleeps), and in receives.
TEST(JobHandles, CancelWakesBarriersAndSleeps) {
  Runtime rt;
  std::atomic<int> blocked{0};
  JobHandle h = rt.submit(
      12,
      [&](Process& p) -> Task<void> {
        blocked.fetch_add(1);
        if (p.rank() == 0) co_await p.sleep_for(std::chrono::hours(1));
        if (p.rank() == 1) (void)co_await p.recv(3, 9);
        co_await p.barrier();
      },
      patient());
  ASSERT_TRUE(reaches(blocked, 12));
  h.cancel();
  expect_stopped([&] { h.wait(); });
  expect_usable(rt);
}

// Cancelling one submitted job leaves the other, running beside it, alone.
TEST(JobHandles, CancelOneOfTwo) {
  Runtime rt;
  std::atomic<int> blocked{0};
  std::atomic<bool> cancelled_over{false};
  JobHandle stopped = rt.submit(
      6,
      [&](Process& p) -> Task<void> {
        blocked.fetch_add(1);
        co_await p.sleep_for(std::chrono::hours(1));
      },
      patient());
  JobHandle kept = rt.submit(6, [&](Process& p) -> Task<void> {
    SY_CHECK(co_await until_set(p, cancelled_over), "the other job never ended");
    const std::int64_t one = 1;
    const auto sum = co_await p.allreduce(std::span(&one, 1));
    SY_CHECK(sum[0] == 6, "allreduce " << sum[0]);
  });
  ASSERT_TRUE(reaches(blocked, 6));
  stopped.cancel();
  expect_stopped([&] { stopped.wait(); });
  cancelled_over = true;
  EXPECT_NO_THROW(kept.wait());
}

// A handle destroyed while its job waits forever cancels it and returns.
TEST(JobHandles, DestroyedHandleCancelsItsJob) {
  Runtime rt;
  std::atomic<int> blocked{0}, unwound{0};
  {
    JobHandle h = rt.submit(
        4,
        [&](Process& p) -> Task<void> {
          blocked.fetch_add(1);
          struct Count {
            std::atomic<int>& n;
            ~Count() { n.fetch_add(1); }
          } count{unwound};
          (void)co_await p.recv(kAnySource);
        },
        patient());
    ASSERT_TRUE(reaches(blocked, 4));
  }
  EXPECT_EQ(unwound.load(), 4);
  expect_usable(rt);
}

// A job that has ended keeps its result, whatever cancel() comes later.
TEST(JobHandles, CancelAfterTheEndChangesNothing) {
  Runtime rt;
  JobHandle h = rt.submit(3, [](Process& p) -> Task<void> { co_await p.barrier(); });
  ASSERT_TRUE(h.wait_for(kMeetWithin));
  h.cancel();
  EXPECT_NO_THROW(h.wait());
}

// run() with a stop token, stopped from another thread; and a token stopped
// before run(): no process runs at all.
TEST(Stop, TokenEndsARun) {
  Runtime rt;
  std::stop_source stop;
  std::atomic<int> blocked{0};
  RunOptions o = patient();
  o.stop = stop.get_token();
  std::thread stopper([&] {
    if (reaches(blocked, 10)) stop.request_stop();
  });
  expect_stopped([&] {
    rt.run(
        10,
        [&](Process& p) -> Task<void> {
          blocked.fetch_add(1);
          if (p.rank() % 2) co_await p.barrier();
          (void)co_await p.recv(kAnySource, 3);
        },
        o);
  });
  stopper.join();
  std::atomic<int> ran{0};
  expect_stopped([&] {
    rt.run(
        10,
        [&](Process&) -> Task<void> {
          ran.fetch_add(1);
          co_return;
        },
        o);
  });
  EXPECT_EQ(ran.load(), 0);
  expect_usable(rt);
}

// The SIGINT recipe (docs/embedding.md, "Stopping a job"): the handler only
// writes a byte to a pipe (async-signal-safe); a watcher thread reads it and
// requests the stop.
int sigint_pipe[2] = {-1, -1};
extern "C" void on_sigint(int) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(sigint_pipe[1], &byte, 1);
}

TEST(Stop, SigintEndsTheJobCleanly) {
  ASSERT_EQ(pipe(sigint_pipe), 0);
  std::stop_source stop;
  std::thread watcher([&stop] {
    char byte = 0;
    ssize_t n;
    while ((n = read(sigint_pipe[0], &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n == 1) stop.request_stop();  // 0: the pipe was closed, no signal came
  });
  struct sigaction on_int {
  }, before{};
  on_int.sa_handler = on_sigint;
  sigemptyset(&on_int.sa_mask);
  ASSERT_EQ(sigaction(SIGINT, &on_int, &before), 0);

  Runtime rt;
  std::atomic<int> blocked{0};
  RunOptions o = patient();
  o.stop = stop.get_token();
  std::thread interrupter([&] {
    if (reaches(blocked, 8)) kill(getpid(), SIGINT);
  });
  expect_stopped([&] {
    rt.run(
        8,
        [&](Process& p) -> Task<void> {
          blocked.fetch_add(1);
          (void)co_await p.recv(kAnySource);
        },
        o);
  });
  interrupter.join();
  close(sigint_pipe[1]);
  watcher.join();
  close(sigint_pipe[0]);
  sigaction(SIGINT, &before, nullptr);
  expect_usable(rt);
}

}  // namespace
