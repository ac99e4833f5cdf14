// Jobs side by side: two host threads calling run() on one Runtime at once,
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
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <switchyard/runtime.hpp>

namespace sy = switchyard;

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
