// switchyard beside oneTBB in one application: the throughput of each
// workload while both run, against each alone, in the same batch.
//
// The two workloads:
//   - switchyard: back-to-back jobs of 16 processes that each yield 8 times
//     and then sum {1, rank} with an allreduce (checked), from one host thread;
//   - oneTBB: back-to-back rounds of a parallel_reduce of a 4-million-element
//     polynomial (checked against the same sum in one thread, once).
//
// One batch (one Google Benchmark iteration) times, in this order, a window of
// switchyard alone, one of TBB alone, and one of both at once, each
// kWindow long; the counters are their rates and ratios:
//   jobs_alone, jobs_beside    switchyard jobs per second, alone and beside TBB
//   rounds_alone, rounds_beside TBB rounds per second, alone and beside switchyard
//   x_jobs, x_rounds           beside / alone (1 is no loss)
// Two ways of sharing the machine:
//   /defaults  both on every core: the Runtime's default workers and TBB's
//              default arena;
//   /split     the recipe of docs/embedding.md ("Beside oneTBB"): switchyard on
//              the last core, a TBB arena as wide as the other cores with its
//              threads pinned there (on one core both share it).
#include <benchmark/benchmark.h>
#include <sched.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>
#include <tbb/task_scheduler_observer.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <switchyard/runtime.hpp>
#include <switchyard/topology.hpp>

namespace sy = switchyard;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kWindow{500};
constexpr std::uint32_t kProcesses = 16;
constexpr int kYields = 8;
constexpr std::uint64_t kElements = 4'000'000;

// One switchyard job; throws if the allreduce is wrong.
void yield_and_reduce_job(sy::Runtime& rt) {
  std::atomic<int> wrong{0};
  rt.run(kProcesses, [&](sy::Process& p) -> sy::Task<void> {
    for (int i = 0; i < kYields; ++i) co_await p.yield();
    const std::int64_t mine[2] = {1, p.rank()};
    const std::vector<std::int64_t> sum = co_await p.allreduce(std::span<const std::int64_t>(mine));
    const std::int64_t n = p.size();
    if (sum[0] != n || sum[1] != n * (n - 1) / 2) ++wrong;
  });
  if (wrong.load() != 0) throw std::runtime_error("bench_beside_tbb: a switchyard job's allreduce was wrong");
}

std::uint64_t polynomial(std::uint64_t i) { return (i * i) ^ (i >> 3); }

std::uint64_t tbb_round(tbb::task_arena& arena) {
  return arena.execute([] {
    return tbb::parallel_reduce(
        tbb::blocked_range<std::uint64_t>(0, kElements, 1 << 15), std::uint64_t{0},
        [](const tbb::blocked_range<std::uint64_t>& r, std::uint64_t acc) {
          for (std::uint64_t i = r.begin(); i != r.end(); ++i) acc += polynomial(i);
          return acc;
        },
        [](std::uint64_t x, std::uint64_t y) { return x + y; });
  });
}

std::uint64_t tbb_expected() {
  static const std::uint64_t sum = [] {
    std::uint64_t s = 0;
    for (std::uint64_t i = 0; i < kElements; ++i) s += polynomial(i);
    return s;
  }();
  return sum;
}

// Runs `work` back to back until `stop` is set or the window ends (when
// `stop` is null); returns how many ran per second.
template <class Work>
double rate(Work&& work, const std::atomic<bool>* stop) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + kWindow;
  std::uint64_t done = 0;
  while (stop != nullptr ? !stop->load(std::memory_order_relaxed) : Clock::now() < end) {
    work();
    ++done;
  }
  return static_cast<double>(done) / std::chrono::duration<double>(Clock::now() - start).count();
}

void pin_this_thread(const cpu_set_t& set) {
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw std::runtime_error("bench_beside_tbb: sched_setaffinity failed");
}

cpu_set_t cpu_set_of(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return set;
}

// Pins every thread to `cpus` while it works in the arena, and gives it back
// every allowed CPU when it leaves (TBB's worker threads serve every arena).
class PinArena : public tbb::task_scheduler_observer {
 public:
  PinArena(tbb::task_arena& arena, const std::vector<int>& cpus, const cpu_set_t& allowed)
      : tbb::task_scheduler_observer(arena), cpus_(cpu_set_of(cpus)), allowed_(allowed) {
    observe(true);
  }
  ~PinArena() override { observe(false); }
  void on_scheduler_entry(bool) override { pin_this_thread(cpus_); }
  void on_scheduler_exit(bool) override { pin_this_thread(allowed_); }

 private:
  cpu_set_t cpus_, allowed_;
};

// Runs `body` on a thread of its own pinned to `cpus` (none: anywhere
// allowed), as an application's thread that drives the jobs.
template <class Body>
std::thread driver_thread(const std::vector<int>& cpus, Body body) {
  return std::thread([&cpus, body] {
    if (!cpus.empty()) pin_this_thread(cpu_set_of(cpus));
    body();
  });
}

// How the two workloads share the machine in the window where both run.
struct Sharing {
  sy::Runtime& rt;
  tbb::task_arena& arena;
  std::vector<int> driver_cpus;  // where the thread driving the jobs runs (none: anywhere)
  std::vector<int> tbb_cpus;  // where this thread runs TBB's rounds (none: anywhere)
};

struct Rates {
  double jobs_alone = 0, rounds_alone = 0, jobs_beside = 0, rounds_beside = 0;
};

// One batch: each workload alone on the whole machine with its defaults
// (`alone`), then both at once as `beside` shares the machine.
Rates one_batch(const Sharing& alone, const Sharing& beside, const cpu_set_t& allowed) {
  Rates r;
  bool tbb_right = true;
  auto job = [&](sy::Runtime& rt) { return [&rt] { yield_and_reduce_job(rt); }; };
  auto round = [&](tbb::task_arena& arena) {
    return [&tbb_right, &arena] { tbb_right = tbb_right && tbb_round(arena) == tbb_expected(); };
  };
  driver_thread(alone.driver_cpus, [&] { r.jobs_alone = rate(job(alone.rt), nullptr); }).join();
  r.rounds_alone = rate(round(alone.arena), nullptr);
  std::atomic<bool> stop{false};
  std::thread driver = driver_thread(beside.driver_cpus, [&] { r.jobs_beside = rate(job(beside.rt), &stop); });
  if (!beside.tbb_cpus.empty()) pin_this_thread(cpu_set_of(beside.tbb_cpus));
  r.rounds_beside = rate(round(beside.arena), nullptr);
  pin_this_thread(allowed);
  stop.store(true);
  driver.join();
  if (!tbb_right) throw std::runtime_error("bench_beside_tbb: a TBB round's sum was wrong");
  return r;
}

void report(benchmark::State& state, const Rates& r) {
  state.counters["jobs_alone"] = r.jobs_alone;
  state.counters["jobs_beside"] = r.jobs_beside;
  state.counters["rounds_alone"] = r.rounds_alone;
  state.counters["rounds_beside"] = r.rounds_beside;
  state.counters["x_jobs"] = r.jobs_beside / r.jobs_alone;
  state.counters["x_rounds"] = r.rounds_beside / r.rounds_alone;
}

void run_batches(benchmark::State& state, const Sharing& alone, const Sharing& beside, const cpu_set_t& allowed) {
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    report(state, one_batch(alone, beside, allowed));
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
}

void BM_BesideTbb_Defaults(benchmark::State& state) {
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  sy::Runtime rt;
  tbb::task_arena arena;
  const Sharing defaults{rt, arena, {}, {}};
  run_batches(state, defaults, defaults, allowed);
}

void BM_BesideTbb_Split(benchmark::State& state) {
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  const sy::Topology topology;
  std::vector<int> cores;
  for (const auto& c : topology.allowed_cores()) cores.push_back(c.os_index);
  std::vector<int> tbb_cores(cores.begin(), cores.end() - 1);
  if (tbb_cores.empty()) tbb_cores = cores;  // one core: both share it
  sy::Runtime rt_all;
  tbb::task_arena arena_all;
  sy::Runtime rt_last(sy::RuntimeOptions{.cores = {cores.back()}});
  tbb::task_arena arena_rest(static_cast<int>(tbb_cores.size()));
  PinArena pin(arena_rest, tbb_cores, allowed);
  run_batches(state, Sharing{rt_all, arena_all, {}, {}}, Sharing{rt_last, arena_rest, {cores.back()}, tbb_cores},
              allowed);
}

BENCHMARK(BM_BesideTbb_Defaults)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BesideTbb_Split)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
