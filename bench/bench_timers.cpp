// Timers: how late Process::sleep_until wakes a sleeper, beside how late the
// kernel's own timed sleeps wake a thread on the same core.
//
// BM_SleeperLateness: one job of `sleepers` processes on core A, all asleep at
// once, their deadlines `gap_us` apart in a shuffled order (1000 sleepers 500 us
// apart is the acceptance shape, whose target is 100 us at the median; the
// others are smaller). Time = the median lateness (wake-up minus deadline) of
// the batch. Its limit, measured right before in the same batch: a thread
// pinned to core A sleeping to the same deadlines one after the other with
// clock_nanosleep(TIMER_ABSTIME) (timer slack 1 ns, as the workers set it);
// condvar_ns: the same with std::condition_variable::wait_until.
// BM_NanosleepLateness / BM_CondvarLateness: the baselines on lines of their own.

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "bench_common.hpp"

namespace {

using namespace switchyard;
using sybench::Clock;

double median_seconds(std::vector<Clock::duration>& lateness) {
  std::nth_element(lateness.begin(), lateness.begin() + lateness.size() / 2, lateness.end());
  return std::chrono::duration<double>(lateness[lateness.size() / 2]).count();
}

// A shuffled slot per sleeper: rank r sleeps to slot (r * 7919) mod n (7919 is
// prime, so this is a permutation for every n it does not divide).
Clock::time_point deadline_of(Clock::time_point start, Rank r, Rank n, std::chrono::microseconds gap) {
  return start + (static_cast<std::uint64_t>(r) * 7919 % n) * gap;
}

double runtime_lateness(Rank n, std::chrono::microseconds gap) {
  std::vector<Clock::duration> lateness(n);
  Clock::time_point start;
  std::vector<int> cores(n, sybench::kCoreA);
  sybench::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        if (p.rank() == 0) start = Clock::now() + std::chrono::milliseconds(5);  // rank 0 starts first
        const auto deadline = deadline_of(start, p.rank(), n, gap);
        co_await p.sleep_until(deadline);
        lateness[p.rank()] = Clock::now() - deadline;
      },
      sybench::placed(cores));
  return median_seconds(lateness);
}

// The kernel's timed sleep, on a thread pinned to core A, to the same deadlines in time order.
template <class SleepUntil>
double thread_lateness(Rank n, std::chrono::microseconds gap, SleepUntil sleep_until) {
  std::vector<Clock::duration> lateness(n);
  sybench::run_pinned(sybench::kCoreA, [&] {
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    const auto start = Clock::now() + std::chrono::milliseconds(5);
    for (Rank i = 0; i < n; ++i) {
      const auto deadline = start + i * gap;
      sleep_until(deadline);
      lateness[i] = Clock::now() - deadline;
    }
  });
  return median_seconds(lateness);
}

double nanosleep_lateness(Rank n, std::chrono::microseconds gap) {
  return thread_lateness(n, gap, [](Clock::time_point deadline) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
    const timespec at{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) != 0) {
    }
  });
}

double condvar_lateness(Rank n, std::chrono::microseconds gap) {
  std::mutex mutex;
  std::condition_variable cv;
  return thread_lateness(n, gap, [&](Clock::time_point deadline) {
    std::unique_lock lock(mutex);
    cv.wait_until(lock, deadline, [&] { return Clock::now() >= deadline; });
  });
}

void BM_SleeperLateness(benchmark::State& state) {
  const auto n = static_cast<Rank>(state.range(0));
  const std::chrono::microseconds gap(state.range(1));
  double figures = 0, limits = 0, condvars = 0;
  try {
    for (auto _ : state) {
      const double limit = nanosleep_lateness(n, gap);
      condvars += condvar_lateness(n, gap);
      const double figure = runtime_lateness(n, gap);
      state.SetIterationTime(figure);
      figures += figure;
      limits += limit;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double k = static_cast<double>(state.iterations());
  sybench::report_vs_limit(state, figures / k, limits / k, 100e3);
  state.counters["condvar_ns"] = condvars / k * 1e9;
}

template <double (*Baseline)(Rank, std::chrono::microseconds)>
void BM_Baseline(benchmark::State& state) {
  for (auto _ : state) {
    state.SetIterationTime(Baseline(static_cast<Rank>(state.range(0)), std::chrono::microseconds(state.range(1))));
  }
}

void common(benchmark::internal::Benchmark* b) {
  b->ArgNames({"sleepers", "gap_us"})
      ->Args({200, 500})
      ->Args({1000, 100})
      ->Args({1000, 500})  // the test's shape (Timers.ThousandSleepersOnOneCoreWakeOnTime)
      ->UseManualTime()
      ->Iterations(sybench::kBatches)
      ->ReportAggregatesOnly(true)
      ->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_SleeperLateness)->Apply(common);
BENCHMARK(BM_Baseline<nanosleep_lateness>)->Name("BM_NanosleepLateness")->Apply(common);
BENCHMARK(BM_Baseline<condvar_lateness>)->Name("BM_CondvarLateness")->Apply(common);

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(argc, argv, "timers: Time = median lateness of a sleeper's wake-up after its deadline");
}
