// What a job costs around its processes' work, and jobs side by side.
//
// BM_JobRoundTrip/processes:P: a job whose P processes do nothing, from
// run()'s call to its return: what every run(), and every
// RedistributionPlan::execute, pays besides its processes' work (their start,
// the workers' wake-up, the job's end and the caller's). Time = the median of
// kRoundTrips such jobs in a batch. Beside it, the same batch, the OS's own
// hand-off (handoff_floor_us, x_handoff_floor = Time / it): the calling
// thread wakes one thread pinned to each core, each asleep on a semaphore,
// and sleeps until both have answered on another, as the simplest thread
// pool does; with the p90 of both (p90_us, handoff_floor_p90_us).
//
// BM_JobsSideBySide: two host threads calling run() on one Runtime at once,
// against one job alone and against the same two jobs back to back, in the
// same batch.
//
// A job: 16 processes that yield and sum {1, rank, over} with an allreduce
// (checked), round after round, for kJobLength: every process leaves after
// the round in which any process saw the deadline pass, so that all make the
// same calls. A job lasts kJobLength whatever else runs; what it gets done in
// that time (rounds) depends on the cores it shares.
//
// One batch (one Google Benchmark iteration) times, in this order:
//   alone_s         one job, from one host thread
//   back_to_back_s  two jobs, one after the other, from one host thread
//   side_by_side_s  two jobs at once, from two host threads (the batch's time)
// and counts the rounds the jobs got done: rounds_alone (the one job's),
// rounds_side_by_side (both jobs' together). side_by_side_s near alone_s
// (not back_to_back_s) says the jobs ran at once; rounds_side_by_side near
// rounds_alone says they shared the cores without losing work.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <semaphore>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange.hpp>

#include "bench_common.hpp"

namespace sy = switchyard;
namespace sys = switchyard::schedulers;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kJobLength{300};
constexpr std::uint32_t kProcesses = 16;

// One job; its rounds. Throws if an allreduce is wrong.
std::uint64_t yield_and_reduce_job(sy::Runtime& rt) {
  std::atomic<std::uint64_t> rounds{0};
  std::atomic<int> wrong{0};
  const Clock::time_point deadline = Clock::now() + kJobLength;
  rt.run(kProcesses, [&](sy::Process& p) -> sy::Task<void> {
    for (std::uint64_t round = 0;; ++round) {
      co_await p.yield();
      const std::int64_t mine[3] = {1, p.rank(), Clock::now() >= deadline ? 1 : 0};
      const std::vector<std::int64_t> sum = co_await p.allreduce(std::span<const std::int64_t>(mine));
      const std::int64_t n = p.size();
      if (sum[0] != n || sum[1] != n * (n - 1) / 2) ++wrong;
      if (sum[2] > 0) {
        if (p.rank() == 0) rounds = round + 1;
        co_return;
      }
    }
  });
  if (wrong.load() != 0) throw std::runtime_error("bench_jobs: an allreduce returned a wrong sum");
  return rounds.load();
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

constexpr int kRoundTrips = 200;

// kRoundTrips hand-offs of the OS alone (see the file's description), in seconds each.
std::vector<double> handoff_floor() {
  std::counting_semaphore<2> go[2]{std::counting_semaphore<2>(0), std::counting_semaphore<2>(0)};
  std::counting_semaphore<2> answered(0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      sybench::pin_this_thread(t == 0 ? sybench::kCoreA : sybench::kCoreB);
      for (;;) {
        go[t].acquire();
        if (stop.load(std::memory_order_relaxed)) return;  // ordered by the semaphore's release
        answered.release();
      }
    });
  }
  std::vector<double> seconds;
  for (int k = 0; k < kRoundTrips; ++k) {
    const Clock::time_point start = Clock::now();
    go[0].release();
    go[1].release();
    answered.acquire();
    answered.acquire();
    seconds.push_back(seconds_since(start));
  }
  stop.store(true, std::memory_order_relaxed);  // ordered by the semaphore's release
  go[0].release();
  go[1].release();
  for (std::thread& t : threads) t.join();
  return seconds;
}

// kRoundTrips jobs of `processes` that do nothing, in seconds each.
std::vector<double> empty_jobs(sy::Runtime& rt, std::uint64_t processes) {
  std::vector<double> seconds;
  std::atomic<std::uint64_t> ran{0};
  for (int k = 0; k < kRoundTrips; ++k) {
    const Clock::time_point start = Clock::now();
    rt.run(processes, [&ran](sy::Process&) -> sy::Task<void> {
      ran.fetch_add(1, std::memory_order_relaxed);  // read after run() returns
      co_return;
    });
    seconds.push_back(seconds_since(start));
  }
  if (ran.load() != processes * kRoundTrips)
    throw std::runtime_error("bench_jobs: a process of an empty job did not run");
  return seconds;
}

void BM_JobRoundTrip(benchmark::State& state) {
  const auto processes = static_cast<std::uint64_t>(state.range(0));
  sy::Runtime rt(sy::RuntimeOptions{.cores = {sybench::kCoreA, sybench::kCoreB}});
  empty_jobs(rt, processes);  // warm: the workers started, the job's pools
  double floor = 0, floor_p90 = 0, tail = 0, ratio = 0;
  for (auto _ : state) {
    const sys::TimeStats handoffs = sys::summarize(handoff_floor());
    const sys::TimeStats jobs = sys::summarize(empty_jobs(rt, processes));
    floor += handoffs.median;
    floor_p90 += handoffs.p90;
    tail += jobs.p90;
    ratio += jobs.median / handoffs.median;
    state.SetIterationTime(jobs.median);
  }
  const auto batches = static_cast<double>(state.iterations());
  state.counters["handoff_floor_us"] = floor / batches * 1e6;
  state.counters["x_handoff_floor"] = ratio / batches;
  state.counters["handoff_floor_p90_us"] = floor_p90 / batches * 1e6;
  state.counters["p90_us"] = tail / batches * 1e6;
}
BENCHMARK(BM_JobRoundTrip)
    ->ArgName("processes")
    ->Arg(2)
    ->Arg(32)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_JobsSideBySide(benchmark::State& state) {
  sy::Runtime rt;
  yield_and_reduce_job(rt);  // warm: the first job's pools, and the second set's below
  double alone = 0, back_to_back = 0, side_by_side = 0;
  std::uint64_t rounds_alone = 0, rounds_side_by_side = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    rounds_alone += yield_and_reduce_job(rt);
    alone += seconds_since(start);

    start = Clock::now();
    yield_and_reduce_job(rt);
    yield_and_reduce_job(rt);
    back_to_back += seconds_since(start);

    std::uint64_t rounds[2] = {0, 0};
    start = Clock::now();
    std::thread other([&] { rounds[1] = yield_and_reduce_job(rt); });
    rounds[0] = yield_and_reduce_job(rt);
    other.join();
    const double both = seconds_since(start);
    side_by_side += both;
    rounds_side_by_side += rounds[0] + rounds[1];
    state.SetIterationTime(both);
  }
  const auto batches = static_cast<double>(state.iterations());
  state.counters["alone_s"] = alone / batches;
  state.counters["back_to_back_s"] = back_to_back / batches;
  state.counters["side_by_side_s"] = side_by_side / batches;
  state.counters["rounds_alone"] = static_cast<double>(rounds_alone) / batches;
  state.counters["rounds_side_by_side"] = static_cast<double>(rounds_side_by_side) / batches;
}
BENCHMARK(BM_JobsSideBySide)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
