// Scheduling cost of the static schedulers (schedulers/).
//
//   BM_Schedule/<name>          one schedule of the same Fig. 7 matrix, n = 512,
//                               d = 128, 1 KiB messages, a new scheduler seed per
//                               iteration; cgm, lp, gm, rsn and rsnh side by side.
//                               cgm builds CCOM serially: the one-core figure,
//                               target <= 2 ms (x_target = schedule time / 2 ms,
//                               <= 1 meets it); cgm_tbb builds CCOM with oneTBB.
//                               Counters: phases, makespan_kib (sum over phases
//                               of the largest transfer).
//   BM_ScheduleNonuniform/<name> rsn, rsnh and optimal-bytes (uncapped, and
//                               capped at 2 and 1 times Δ phases) on the
//                               Wang-Lin-Ranka test set 2 pattern (1..32 KiB),
//                               same n and d: makespan_kib is what RS_NH and
//                               optimal-bytes reduce, phases what it costs;
//                               x_lower = makespan / the byte lower bound (1 is
//                               optimal).
//   BM_Optimal/<name>/n:N/d:D   optimal beside cgm (serial CCOM) on the same
//                               Fig. 7 matrices, n = 512, d = 128 and n = 1024,
//                               d = 512; optimal's x_target = time / target
//                               (10 ms and 250 ms on one core), <= 1 meets it.
//   BM_OptimalBytes/<shape>/<name>
//                               optimal-bytes on the three shapes of its work
//                               bounds (the largest it must schedule in time)
//                               with optimal (exactly Δ phases, whole messages)
//                               beside it as the baseline: fig7 (n = 512,
//                               d = 128, 1 KiB messages), star (one receiver,
//                               n - 1 = 29 999 senders of 1..32 KiB) and dense
//                               (2000 x 2000, 1..32 KiB). x_target = time /
//                               target (100 ms, 1 s, 20 s), <= 1 meets it;
//                               delta = Δ, optimal's phase count; x_lower must
//                               be 1 for optimal-bytes. 3 repetitions of one
//                               iteration for the big shapes. The dense
//                               optimal-bytes line is by far the slowest
//                               (2967 phases, 5.3 million pieces; its time
//                               in docs/benchmarks.md, "Figures behind the
//                               schedulers' comments"): filter it out for
//                               quick runs.
//   BM_Compaction/<kind>/n:N/parallel:P
//                               CCOM alone (Fig. 5), d = 64, n = 1024 and 4096.
//                               kind sparse: from CommMatrix rows, O(n d);
//                               kind dense: the paper's scan of a dense n x n COM,
//                               O(n^2). parallel:1 lines also time the serial
//                               build in the same iteration and report
//                               speedup = serial / parallel (2 cores: ideal 2).
//
// Every line is repeated 10 times and only the aggregates are printed: the
// median is the figure.
//
// Memory: glibc hands large freed blocks (a schedule is 1.5 MiB, a CCOM up to
// 2 MiB) back to the kernel, so every iteration would fault in and zero fresh
// pages, which costs more than the compaction itself and serialises the parallel
// build on the kernel's page-fault path. main() keeps freed memory in the
// process (mallopt), as the heap of a long-running program would.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <switchyard/schedulers/ccom.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/optimal.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>
#include <switchyard/splitmix64.hpp>

namespace {

using namespace switchyard::schedulers;
using Clock = std::chrono::steady_clock;

constexpr switchyard::Rank kN = 512;
constexpr switchyard::Rank kD = 128;
constexpr double kCgmTargetMs = 2.0;

const CommMatrix& uniform_matrix() {
  static const CommMatrix m = fig7_matrix(kN, kD, 1024, 42);
  return m;
}

const CommMatrix& nonuniform() {
  static const CommMatrix m = nonuniform_matrix(kN, kD, 1024, 42);
  return m;
}

// "optimal-bytes/cap:K": optimal-bytes with at most K·Δ phases.
Schedule run(const std::string& name, const CommMatrix& m, std::uint64_t seed) {
  if (name == "cgm") return schedule_cgm(m, seed, false);
  if (name == "cgm_tbb") return schedule_cgm(m, seed, true);
  if (const auto cap = name.find("/cap:"); cap != std::string::npos)
    return schedule_optimal_bytes(m, OptimalBytesOptions{std::stoull(name.substr(cap + 5)) * m.max_degree()});
  return make_schedule(name, m, seed);
}

// target_ms > 0: also report x_target = schedule time / target.
void schedule_line(benchmark::State& state, const std::string& name, const CommMatrix& m, double target_ms) {
  std::uint64_t seed = 0, phases = 0, makespan = 0;
  run(name, m, seed);  // warms the allocator and, for cgm_tbb, the TBB workers
  double seconds = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    const Schedule s = run(name, m, ++seed);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    phases += s.phases.size();
    makespan += s.makespan_bytes();
    benchmark::DoNotOptimize(s.phases.data());
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["phases"] = static_cast<double>(phases) / iterations;
  state.counters["makespan_kib"] = static_cast<double>(makespan) / iterations / 1024.0;
  state.counters["x_lower"] = static_cast<double>(makespan) / iterations / static_cast<double>(m.max_load_bytes());
  if (target_ms > 0) state.counters["x_target"] = seconds / iterations * 1e3 / target_ms;
}

void BM_Schedule(benchmark::State& state, const std::string& name) {
  schedule_line(state, name, uniform_matrix(), name == "cgm" ? kCgmTargetMs : 0);
}

void BM_ScheduleNonuniform(benchmark::State& state, const std::string& name) {
  schedule_line(state, name, nonuniform(), 0);
}

void BM_Optimal(benchmark::State& state, const std::string& name) {
  const auto n = static_cast<switchyard::Rank>(state.range(0));
  const auto d = static_cast<switchyard::Rank>(state.range(1));
  const CommMatrix m = fig7_matrix(n, d, 1024, 42);
  const double target_ms = name != "optimal" ? 0 : n <= 512 ? 10 : 250;
  schedule_line(state, name, m, target_ms);
}

// The shapes that bound optimal-bytes' work (the largest it must schedule
// within its targets): each message 1..32 KiB.
struct OptimalBytesShape {
  const char* name;
  double target_ms;
  int iterations;  // 0: as many as Google Benchmark likes
};
constexpr OptimalBytesShape kOptimalBytesShapes[] = {{"fig7", 100, 0}, {"star", 1000, 1}, {"dense", 20000, 1}};

// Each built on first use only: the dense one holds 4 million entries.
const CommMatrix& optimal_bytes_matrix(const std::string& shape) {
  if (shape == "fig7") return uniform_matrix();
  if (shape == "star") {
    static const CommMatrix star = [] {
      constexpr switchyard::Rank n = 30000;
      CommMatrix m(n);
      switchyard::SplitMix64 rng(42);
      for (switchyard::Rank i = 1; i < n; ++i) m.set(i, 0, 1024 * (1 + rng() % 32));
      return m;
    }();
    return star;
  }
  static const CommMatrix dense = nonuniform_matrix(2000, 2000, 1024, 42);
  return dense;
}

void BM_OptimalBytes(benchmark::State& state, const OptimalBytesShape& shape, const std::string& name) {
  const CommMatrix& m = optimal_bytes_matrix(shape.name);
  schedule_line(state, name, m, shape.target_ms);
  state.counters["delta"] = static_cast<double>(m.max_degree());
}

void BM_Compaction(benchmark::State& state, bool dense) {
  const auto n = static_cast<switchyard::Rank>(state.range(0));
  const bool parallel = state.range(1) != 0;
  const CommMatrix m = fig7_matrix(n, 64, 1, 7);
  const std::vector<std::uint8_t> com = dense ? dense_pattern(m) : std::vector<std::uint8_t>{};
  auto build = [&](bool par, std::uint64_t seed) {
    return dense ? compact_dense(com, n, seed, par) : compact(m, seed, par);
  };
  if (build(false, 1) != build(true, 1)) {
    state.SkipWithError("serial and parallel compaction differ");
    return;
  }
  double serial_s = 0, parallel_s = 0;
  std::uint64_t seed = 1;
  for (auto _ : state) {
    ++seed;
    if (parallel) {
      const auto t0 = Clock::now();
      benchmark::DoNotOptimize(build(false, seed).dst.data());
      const auto t1 = Clock::now();
      benchmark::DoNotOptimize(build(true, seed).dst.data());
      const auto t2 = Clock::now();
      serial_s += std::chrono::duration<double>(t1 - t0).count();
      const double p = std::chrono::duration<double>(t2 - t1).count();
      parallel_s += p;
      state.SetIterationTime(p);
    } else {
      const auto t0 = Clock::now();
      benchmark::DoNotOptimize(build(false, seed).dst.data());
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      serial_s += s;
      state.SetIterationTime(s);
    }
  }
  if (parallel) state.counters["speedup"] = serial_s / parallel_s;
}

void register_all() {
  for (const std::string name : {"cgm", "cgm_tbb", "lp", "gm", "rsn", "rsnh"}) {
    benchmark::RegisterBenchmark(("BM_Schedule/" + name).c_str(), BM_Schedule, name)
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(10)
        ->ReportAggregatesOnly(true);
  }
  for (const std::string name : {"rsn", "rsnh", "optimal-bytes", "optimal-bytes/cap:2", "optimal-bytes/cap:1"}) {
    benchmark::RegisterBenchmark(("BM_ScheduleNonuniform/" + name).c_str(), BM_ScheduleNonuniform, name)
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(10)
        ->ReportAggregatesOnly(true);
  }
  for (const std::string name : {"cgm", "optimal"}) {
    benchmark::RegisterBenchmark(("BM_Optimal/" + name).c_str(), BM_Optimal, name)
        ->ArgNames({"n", "d"})
        ->Args({512, 128})
        ->Args({1024, 512})
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(10)
        ->ReportAggregatesOnly(true);
  }
  for (const OptimalBytesShape& shape : kOptimalBytesShapes) {
    for (const std::string name : {"optimal", "optimal-bytes"}) {
      auto* b = benchmark::RegisterBenchmark(("BM_OptimalBytes/" + std::string(shape.name) + "/" + name).c_str(),
                                             BM_OptimalBytes, shape, name)
                    ->Unit(benchmark::kMillisecond)
                    ->Repetitions(shape.iterations == 0 ? 5 : 3)
                    ->ReportAggregatesOnly(true);
      if (shape.iterations != 0) b->Iterations(shape.iterations);
    }
  }
  for (const bool dense : {false, true}) {
    benchmark::RegisterBenchmark(dense ? "BM_Compaction/dense" : "BM_Compaction/sparse", BM_Compaction, dense)
        ->ArgNames({"n", "parallel"})
        ->ArgsProduct({{1024, 4096}, {0, 1}})
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond)
        ->Repetitions(10)
        ->ReportAggregatesOnly(true);
  }
}

}  // namespace

int main(int argc, char** argv) {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
