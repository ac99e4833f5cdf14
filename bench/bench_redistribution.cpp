// Array redistribution (schedulers/redistribution): the HPF program of
// Guo-Nakata-Yamashita Fig. 9, whose REDISTRIBUTE the paper times in Figs. 10
// and 11: 120 000 reals (here doubles) from cyclic(6) to cyclic(2) over P
// processes, K = 3 steps, and the K = 6 variant. The paper does not give the
// K = 6 program; it is taken here as cyclic(12) to cyclic(2): b / b' = 6, so
// a source sends to 6 targets (K = min(6, P): 4 with P = 4), with the same
// two-element runs to pack and unpack as the K = 3 case.
//
//   BM_Redistribute/K:k/procs:P/<kind>
//                               one redistribution of the array, P = 4 .. 64
//                               processes round robin on cores 0 and 1, with
//                               schedule kind naive (Fig. 1), offset (Fig. 4),
//                               table (Algorithm 1), optimal, optimal-bytes.
//                               The plan is built before the batch (built once,
//                               run many times). A batch is one job in which the
//                               processes run the redistribution kRuns times,
//                               each after a barrier, with staging memory
//                               allocated once; Time = from the first process
//                               leaving the barrier to the last one done, the
//                               median of the batch's runs.
//                               Baseline beside it, in the same job, alternating
//                               with the figure run by run: naive, the paper's
//                               "without scheduling" (naive_us, x_naive = Time /
//                               naive: below 1 the schedule wins). Counters:
//                               K, steps, contention_free (1 / 0), plan_us (the
//                               plan's construction: COM, schedule, descriptors;
//                               median of kPlans builds), schedule_us (the
//                               schedule part alone), faults_per_run.
//   BM_RedistributeScaling/K:3/<kind>
//                               the issue's scaling target: K = 3 on 4 processes
//                               takes at most 1.5 x as long as on 8. A batch is
//                               one job of 8 processes in which the P = 8 and the
//                               P = 4 plan run alternately, kRuns times each (in
//                               the P = 4 runs, processes 4..7 return at once);
//                               every run allocates its staging memory, as the
//                               CLI's runs do (the run overload without
//                               RedistributionBuffers). Time = the median P = 4
//                               run. Counters: p8_us (the median P = 8 run, same
//                               batches), x_p8 = Time / p8_us, target_x = 1.5
//                               (x_p8 <= target_x meets it), faults_per_run.
//
//   BM_RedistributeVsFloor/<case>/procs:P
//                               the issue's targets: case fig9 is Fig. 9's K = 3
//                               (cyclic(6) -> cyclic(2)) on P = 2, 4, 8
//                               processes; grid2d is 1000 x 1000
//                               block,cyclic(2)@2x2 -> cyclic(3),block@4x1. The
//                               optimal schedule, run compiled (the default: each
//                               element copied once, straight from its source's
//                               local_in into its target's local_out). Time = the
//                               median of a batch's kRuns runs, as above. Beside
//                               it in every batch, measured right before: the
//                               floor (floor_us, x_floor = Time / floor; 2 pinned
//                               threads memcpy every target's whole block once)
//                               and the strided floor (strided_floor_us,
//                               x_strided_floor; the same threads copy the
//                               element runs the redistribution must copy, each
//                               as long as both arrays allow, the short ones by
//                               fixed-size copies); target_x = 3 (x_target = x_floor /
//                               3, at most 1 meets it). Where
//                               bench_redistribution_scalapack was built:
//                               ScaLAPACK's pdgemr2d of the same redistribution,
//                               one MPI rank per process, run once per line
//                               before the batches with as many runs as they hold
//                               (scalapack_us, x_scalapack = Time / ScaLAPACK,
//                               speedup_scalapack = ScaLAPACK / Time, target_speedup
//                               = 20: at least that meets it; scalapack_failed = 1
//                               if mpirun failed, why on stderr).
//   BM_RedistributeFirstRun/fig9/procs:P
//                               the issue's first runs: fig9 as above, each run
//                               a job of its own (RedistributionPlan::execute, as
//                               the CLI runs each repetition), so each is its
//                               plan's first run in the job. Time = their median
//                               (the plan's first job left out: first_job_us);
//                               beside it in every batch warm runs of the same
//                               plan in one job (warm_us, x_warm = Time / warm,
//                               target_warm_x = 2) and the floor (floor_us,
//                               x_floor, target_x = 3). in_place_x_warm: the
//                               same first runs, each a job of its own in which
//                               every process fills its own targets before the
//                               run, as the warm runs do (the data where a warm
//                               run finds it, not in the main thread's cache),
//                               their median / warm. floor_filled_us,
//                               filled_x_floor: the floor with every target
//                               filled by the thread on core 0 before each
//                               repetition, as the main thread fills them
//                               before a first run here, and its ratio to the
//                               floor: what the hardware charges for targets
//                               another core wrote last. execute_call_us: the
//                               same calls from call to return, the job's start
//                               and end included (median): what a caller waits.
//
// faults_per_run: page faults (minor + major, getrusage(RUSAGE_SELF): the
// runtime's workers are threads of this program) during the batches' jobs, set-up
// included, divided by the runs in them, figure and baseline alike.
//
// Every run verifies every element of every target, outside the clock.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <switchyard/span_timer.hpp>
#include <vector>

#include "bench_common.hpp"

using namespace switchyard;
using namespace switchyard::schedulers::redistribution;

namespace {

constexpr Index kElements = 120000;
constexpr int kRuns = 10;  // redistributions per batch and schedule
constexpr int kPlans = 5;  // plan builds timed per line
constexpr double kScalingTargetX = 1.5;
constexpr std::chrono::microseconds kPause{1000};  // BM_RedistributeFirstRun's pause between floor repetitions
constexpr double kFloorTargetX = 3;  // BM_RedistributeVsFloor: at most 3 x the plain floor
constexpr double kScalapackTargetSpeedup = 20;  // and at least 20 x faster than pdgemr2d

#if defined(SWITCHYARD_REDISTRIBUTION_SCALAPACK) && defined(SWITCHYARD_MPIRUN)
constexpr const char* kScalapackProgram = SWITCHYARD_REDISTRIBUTION_SCALAPACK;
constexpr const char* kMpirun = SWITCHYARD_MPIRUN;
#else
constexpr const char* kScalapackProgram = nullptr;
constexpr const char* kMpirun = nullptr;
#endif

// A redistribution's layouts and arrays: each element's value is its index
// in the global array.
struct Arrays {
  Layout src, dst;
  std::vector<std::vector<double>> in, want, out;
};

Arrays arrays_of(Layout src, Layout dst) {
  Arrays c{std::move(src), std::move(dst), {}, {}, {}};
  std::vector<double> global(static_cast<std::size_t>(c.src.elements()));
  for (std::size_t e = 0; e < global.size(); ++e) global[e] = static_cast<double>(e);
  c.in = c.src.scatter(global);
  c.want = c.dst.scatter(global);
  c.out = c.want;
  return c;
}

// The arrays of one (K, P), built once for the program.
Arrays& fig9(int k, Rank p) {
  static std::map<std::pair<int, Rank>, Arrays> cases;
  auto it = cases.find({k, p});
  if (it != cases.end()) return it->second;
  const Index b = k == 3 ? 6 : 12;
  Arrays c = arrays_of(Layout({kElements}, Distribution{{{DimKind::cyclic, b}}, {p}}),
                       Layout({kElements}, Distribution{{{DimKind::cyclic, 2}}, {p}}));
  return cases.emplace(std::make_pair(k, p), std::move(c)).first->second;
}

using sybench::Clock;

// One plan of a batch and the arrays it moves.
struct Contender {
  const RedistributionPlan* plan;
  Arrays* arrays;
};

// One batch: a job of as many processes as the largest plan needs, in which,
// `rounds` times, every contender runs in turn, each run after a barrier and timed
// inside the processes; after each run (and a barrier, once every clock has
// stopped) its targets check their blocks, outside
// the clock. A process beyond a plan's processes() returns from its run at once.
// own_buffers: each process makes its staging memory (RedistributionBuffers)
// once per plan, before the runs; otherwise every run allocates its own, as the
// CLI does. Returns, per contender, the ms of each run, from the first process
// leaving the barrier to the last one done (a process beyond the plan's
// processes, returning at once, is one resume of its core).
std::vector<std::vector<double>> batch(std::span<const Contender> contenders, bool own_buffers, int rounds = kRuns) {
  Rank n = 0;
  for (const Contender& c : contenders) n = std::max(n, c.plan->processes());
  const std::size_t runs = static_cast<std::size_t>(rounds) * contenders.size();
  SpanTimer timer(sybench::runtime(), static_cast<std::uint32_t>(runs));
  sybench::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank r = p.rank();
        std::vector<std::optional<RedistributionBuffers>> staging(contenders.size());
        for (std::size_t k = 0; k < contenders.size(); ++k) {
          if (own_buffers && r < contenders[k].plan->processes()) staging[k].emplace(*contenders[k].plan, r);
        }
        for (std::size_t run = 0; run < runs; ++run) {
          const std::size_t k = run % contenders.size();
          const RedistributionPlan& plan = *contenders[k].plan;
          Arrays& c = *contenders[k].arrays;
          std::span<const double> in;
          std::span<double> out;
          if (r < c.in.size()) in = c.in[r];
          if (r < c.out.size()) out = c.out[r];
          std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
          co_await p.barrier();
          timer.start(static_cast<std::uint32_t>(run), p);
          if (staging[k]) {
            co_await plan.run(p, in, out, *staging[k]);
          } else {
            co_await plan.run(p, in, out);
          }
          timer.end(static_cast<std::uint32_t>(run), p);
          // Checked once every process has stopped its clock: a process that
          // checks its block before the next one on its core is resumed would
          // add the check to that one's time (40-50 us a process at P = 4).
          co_await p.barrier();
          if (r < c.out.size() && !std::equal(out.begin(), out.end(), c.want[r].begin())) {
            throw std::runtime_error("redistribution with schedule " + std::string(name(plan.kind())) + " on " +
                                     std::to_string(plan.processes()) + " processes: target " + std::to_string(r) +
                                     " holds a wrong element");
          }
        }
      },
      sybench::round_robin());
  std::vector<std::vector<double>> ms(contenders.size());
  for (std::size_t run = 0; run < runs; ++run) {
    const std::size_t k = run % contenders.size();
    ms[k].push_back(std::chrono::duration<double, std::milli>(timer.span(static_cast<std::uint32_t>(run))).count());
  }
  return ms;
}

// Page faults (minor and major) of this process so far: the runtime's workers
// are its threads, so their faults count too.
double page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_minflt + usage.ru_majflt);
}

// Runs `batches` batches of the contenders (the figure last) and reports the
// figure's median run as the batch's time; returns the sum over the batches of
// each contender's median run, in ms. Counts faults_per_run.
std::vector<double> time_batches(benchmark::State& state, std::span<const Contender> contenders, bool own_buffers) {
  std::vector<double> sums(contenders.size(), 0.0);
  double faults = 0;
  for (auto _ : state) {
    const double faults_before = page_faults();
    const std::vector<std::vector<double>> ms = batch(contenders, own_buffers);
    faults += page_faults() - faults_before;
    for (std::size_t k = 0; k < contenders.size(); ++k) sums[k] += median(ms[k]);
    state.SetIterationTime(median(ms.back()) / 1e3);
  }
  state.counters["faults_per_run"] =
      faults / (static_cast<double>(state.iterations()) * kRuns * static_cast<double>(contenders.size()));
  return sums;
}

void BM_Redistribute(benchmark::State& state, int k, Rank p, ScheduleKind kind) {
  try {
    Arrays& c = fig9(k, p);
    std::vector<double> plan_ms, schedule_ms;
    std::optional<RedistributionPlan> plan;
    for (int i = 0; i < kPlans; ++i) {
      plan.emplace(c.src, c.dst, kind);
      plan_ms.push_back(plan->timings().total_ms());
      schedule_ms.push_back(plan->timings().schedule_ms);
    }
    std::optional<RedistributionPlan> naive;
    std::vector<Contender> contenders;
    if (kind != ScheduleKind::naive) {
      naive.emplace(c.src, c.dst, ScheduleKind::naive);
      contenders.push_back({&*naive, &c});
    }
    contenders.push_back({&*plan, &c});
    const std::vector<double> sums = time_batches(state, contenders, true);
    const double n = static_cast<double>(state.iterations());
    state.counters["K"] = plan->com().max_sends();
    state.counters["steps"] = plan->steps();
    state.counters["contention_free"] = plan->contention_free() ? 1 : 0;
    state.counters["plan_us"] = median(plan_ms) * 1e3;
    state.counters["schedule_us"] = median(schedule_ms) * 1e3;
    state.counters["naive_us"] = sums.front() / n * 1e3;
    state.counters["x_naive"] = sums.back() / sums.front();
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

// The issue's scaling target for Fig. 9 (K = 3): 4 processes take at most
// 1.5 times as long as 8. Both run in every batch, alternately in one job of 8
// processes, through the run overload without caller-owned staging memory.
void BM_RedistributeScaling(benchmark::State& state, ScheduleKind kind) {
  try {
    Arrays& four = fig9(3, 4);
    Arrays& eight = fig9(3, 8);
    const RedistributionPlan on_four(four.src, four.dst, kind);
    const RedistributionPlan on_eight(eight.src, eight.dst, kind);
    const std::vector<Contender> contenders{{&on_eight, &eight}, {&on_four, &four}};
    const std::vector<double> sums = time_batches(state, contenders, false);
    state.counters["p8_us"] = sums.front() / static_cast<double>(state.iterations()) * 1e3;
    state.counters["x_p8"] = sums.back() / sums.front();
    state.counters["target_x"] = kScalingTargetX;
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

// --- the issue's targets: against the floor and ScaLAPACK ---

// One contiguous run of elements a target receives: from its source's local_in
// into its own local_out.
struct ElementRun {
  const double* from;
  double* to;
  std::size_t bytes;
};

// A target line's redistribution, built once for the program: its arrays and,
// per core (0 and 1, where round robin puts the even and the odd processes),
// the runs of elements its targets receive, messages to oneself included,
// each as long as both arrays allow, found element by element from the
// layouts alone (not from the plan).
struct FloorCase {
  Arrays arrays;
  std::vector<ElementRun> runs[2];
};

// One run, as fast as it goes: the short ones (cyclic(2)'s are 16 bytes) by a
// copy of a fixed size, one load and one store, not a call into memcpy.
inline void copy_element_run(const ElementRun& run) {
  switch (run.bytes) {
    case 8:
      std::memcpy(run.to, run.from, 8);
      return;
    case 16:
      std::memcpy(run.to, run.from, 16);
      return;
    case 24:
      std::memcpy(run.to, run.from, 24);
      return;
    case 32:
      std::memcpy(run.to, run.from, 32);
      return;
    default:
      std::memcpy(run.to, run.from, run.bytes);
  }
}

FloorCase floor_case(Layout src, Layout dst) {
  FloorCase c{arrays_of(std::move(src), std::move(dst)), {}};
  Arrays& a = c.arrays;
  std::vector<std::size_t> last(a.dst.processes(),
                                std::numeric_limits<std::size_t>::max());  // per target, its last run
  std::vector<Index> g(a.src.rank(), 0);  // row-major, last fastest
  for (Index e = 0; e < a.src.elements(); ++e) {
    const Rank s = a.src.owner(g), t = a.dst.owner(g);
    const double* from = a.in[s].data() + a.src.local_offset(s, g);
    double* to = a.out[t].data() + a.dst.local_offset(t, g);
    std::vector<ElementRun>& runs = c.runs[t % 2];
    if (last[t] < runs.size() && runs[last[t]].from + runs[last[t]].bytes / sizeof(double) == from &&
        runs[last[t]].to + runs[last[t]].bytes / sizeof(double) == to) {
      runs[last[t]].bytes += sizeof(double);
    } else {
      last[t] = runs.size();
      runs.push_back({from, to, sizeof(double)});
    }
    for (std::size_t d = g.size(); d-- > 0 && ++g[d] == a.src.extent()[d];) g[d] = 0;
  }
  return c;
}

FloorCase& target_case(const std::string& name, Rank p) {
  static std::map<std::pair<std::string, Rank>, FloorCase> cases;
  auto it = cases.find({name, p});
  if (it != cases.end()) return it->second;
  FloorCase c = name == "fig9" ? floor_case(Layout({kElements}, Distribution::parse("cyclic(6)@" + std::to_string(p))),
                                            Layout({kElements}, Distribution::parse("cyclic(2)@" + std::to_string(p))))
                               : floor_case(Layout({1000, 1000}, Distribution::parse("block,cyclic(2)@2x2")),
                                            Layout({1000, 1000}, Distribution::parse("cyclic(3),block@4x1")));
  return cases.emplace(std::make_pair(name, p), std::move(c)).first->second;
}

// A floor of the redistribution, in seconds, median of kRuns: two threads
// pinned to cores 0 and 1, between two spin barriers, each filling the blocks
// of its core's targets, as in bench_exchange's floor_exchange_s. Plain: one
// memcpy per target of its whole block, from a copy of what it must hold (the
// array's bytes once, as fast as they go). Strided: each ElementRun copied
// straight from the sources' local_in (copy_element_run: the same elements,
// in the runs a redistribution must copy). A repetition = earliest thread leaving the
// first barrier to the latest arriving at the second; before it each thread
// fills its targets with NaN (`filled_by_one`: the thread on core 0 fills
// every target, as a program's main thread fills them before a run), after it
// each checks every element of them and then, given a `pause`, spins on the
// clock that long, touching nothing.
double floor_s(FloorCase& c, bool strided, std::chrono::microseconds pause = {}, bool filled_by_one = false) {
  Arrays& a = c.arrays;
  sybench::SpinBarrier sync;
  std::vector<Clock::time_point> start(std::size_t{2} * kRuns), end(start.size());
  std::optional<Rank> wrong[2];  // kept, not thrown: the other thread would wait at the barrier forever
  auto copy_side = [&](Rank t) {
    for (std::uint32_t rep = 0; rep < kRuns; ++rep) {
      // Filled by one, the other thread's targets are refilled only once it has checked them.
      if (filled_by_one && rep > 0) sync.arrive_and_wait(2);
      for (Rank r = 0; r < a.out.size(); ++r) {
        if (filled_by_one ? t != 0 : r % 2 != t) continue;
        std::fill(a.out[r].begin(), a.out[r].end(), std::numeric_limits<double>::quiet_NaN());
      }
      sync.arrive_and_wait(2);
      start[2 * rep + t] = Clock::now();
      if (strided) {
        for (const ElementRun& run : c.runs[t]) copy_element_run(run);
      } else {
        for (Rank r = t; r < a.out.size(); r += 2) {
          std::memcpy(a.out[r].data(), a.want[r].data(), a.out[r].size() * sizeof(double));
        }
      }
      end[2 * rep + t] = Clock::now();
      sync.arrive_and_wait(2);
      for (Rank r = t; r < a.out.size() && !wrong[t]; r += 2) {
        if (a.out[r] != a.want[r]) wrong[t] = r;
      }
      for (const Clock::time_point from = Clock::now(); Clock::now() - from < pause;) {
      }
    }
  };
  sybench::run_pinned_pair(
      sybench::kCoreA, [&] { copy_side(0); }, sybench::kCoreB, [&] { copy_side(1); });
  for (const auto& w : wrong) {
    if (w) throw std::runtime_error("floor: target " + std::to_string(*w) + " holds a wrong element");
  }
  std::vector<double> seconds;
  for (std::size_t rep = 0; rep < kRuns; ++rep) {
    seconds.push_back(sybench::seconds_between(std::min(start[2 * rep], start[2 * rep + 1]),
                                               std::max(end[2 * rep], end[2 * rep + 1])));
  }
  return median(seconds);
}

// ScaLAPACK's median microseconds per pdgemr2d of the line's case, over
// `runs` runs: one run of bench_redistribution_scalapack through mpirun, one
// rank per process, rank k on core k mod 2 (as round robin places process k).
// nullopt if it failed (why on stderr) or was not built.
std::optional<double> scalapack_us(const std::string& name, Rank p, int runs) {
  if (!kScalapackProgram) return std::nullopt;
  const std::string command = std::string("'") + kMpirun + "' --allow-run-as-root --oversubscribe -np " +
                              std::to_string(p) + " --bind-to core:overload-allowed --map-by core --timeout 1800 '" +
                              kScalapackProgram + "' " + name + " " + std::to_string(runs);
  return sybench::baseline_median_us(command, "bench_redistribution");
}

// Sums over the batches, in seconds.
struct FloorSums {
  double figure = 0, floor = 0, strided = 0;
};

void report_vs_floor(benchmark::State& state, const FloorSums& s, std::optional<double> scalapack) {
  const double batches = static_cast<double>(state.iterations());
  const double figure_us = s.figure / batches * 1e6;
  state.counters["floor_us"] = s.floor / batches * 1e6;
  state.counters["strided_floor_us"] = s.strided / batches * 1e6;
  state.counters["x_floor"] = s.figure / s.floor;
  state.counters["x_strided_floor"] = s.figure / s.strided;
  state.counters["target_x"] = kFloorTargetX;
  state.counters["x_target"] = s.figure / s.floor / kFloorTargetX;
  if (scalapack) {
    state.counters["scalapack_us"] = *scalapack;
    state.counters["x_scalapack"] = figure_us / *scalapack;
    state.counters["speedup_scalapack"] = *scalapack / figure_us;
    state.counters["target_speedup"] = kScalapackTargetSpeedup;
  } else if (kScalapackProgram) {
    state.counters["scalapack_failed"] = 1;
  }
}

// The issue's targets for redistribution: the line's case on p processes,
// with the optimal schedule, run compiled as by default (each element copied
// once, straight from local_in into local_out), against its two floors and
// ScaLAPACK. A batch: the plain floor, the strided floor, then a job in which
// the processes redistribute kRuns times, each after a barrier (batch()),
// with the plan built before the batches: Time = the median run.
void BM_RedistributeVsFloor(benchmark::State& state, const std::string& name, Rank p) {
  try {
    FloorCase& c = target_case(name, p);
    const RedistributionPlan plan(c.arrays.src, c.arrays.dst, ScheduleKind::optimal);
    const std::optional<double> scalapack = scalapack_us(name, p, sybench::kBatches * kRuns);
    const std::vector<Contender> contenders{{&plan, &c.arrays}};
    FloorSums sums;
    for (auto _ : state) {
      sums.floor += floor_s(c, false);
      sums.strided += floor_s(c, true);
      const double figure = median(batch(contenders, false).front()) / 1e3;
      state.SetIterationTime(figure);
      sums.figure += figure;
    }
    report_vs_floor(state, sums, scalapack);
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

// A plan's first run in a job against its warm runs: the case fig9 on p
// processes, optimal schedule, compiled. A batch: the plain floor; a job of
// kRuns warm runs (batch(): their median, warm_us); then kRuns jobs through
// RedistributionPlan::execute, as the CLI runs each repetition, each a job of
// its own whose one run is its first (Time = their median). The plan is made
// afresh for each batch, so each batch's first job is the plan's first ever
// (first_job_us, the median over the batches of that one run: the memory
// descriptions paired and the cores' programs compiled) and the later ones
// take the programs their first job compiled. execute_call_us: the median of
// the same calls (the first job left out) from the call to its return, the
// job's start and end included: what a caller waits. Counters: x_warm = Time /
// warm_us, target_warm_x = 2 (x_warm <= it meets it); floor_us, x_floor, and
// target_x = 3 as in BM_RedistributeVsFloor. Beside them, what a pause alone
// costs the same bytes' copies outside switchyard: the floor with each
// repetition after a pause of kPause in which the threads spin on the clock
// (floor_paused_us; paused_x_floor = it / floor_us). A run that is first in
// its job follows such a pause: the last job's end, the caller's checks and
// fills, this job's start. Every run is checked, every element, outside the
// clock.
void BM_RedistributeFirstRun(benchmark::State& state, Rank p) {
  try {
    FloorCase& c = target_case("fig9", p);
    Arrays& a = c.arrays;
    const std::vector<std::span<const double>> in(a.in.begin(), a.in.end());
    const std::vector<std::span<double>> out(a.out.begin(), a.out.end());
    double first = 0, warm = 0, floor = 0, in_place = 0, paused = 0, filled = 0, wall = 0;
    std::vector<double> first_jobs;
    for (auto _ : state) {
      const RedistributionPlan plan(a.src, a.dst, ScheduleKind::optimal);
      floor += floor_s(c, false);
      paused += floor_s(c, false, kPause);
      filled += floor_s(c, false, {}, true);
      std::vector<double> ms, calls;
      for (int run = 0; run < kRuns; ++run) {
        for (std::vector<double>& block : a.out)
          std::fill(block.begin(), block.end(), std::numeric_limits<double>::quiet_NaN());
        const Clock::time_point called = Clock::now();
        ms.push_back(plan.execute(sybench::runtime(), in, out, sybench::round_robin()));
        calls.push_back(sybench::seconds_between(called, Clock::now()));
        if (a.out != a.want) throw std::runtime_error("first run: a target holds a wrong element");
      }
      calls.erase(calls.begin());  // the plan's first job, as below
      wall += median(calls);
      first_jobs.push_back(ms.front());
      const std::vector<Contender> contenders{{&plan, &a}};
      std::vector<double> placed;  // each batch() of one run: a job of its own
      for (int run = 0; run < kRuns; ++run) placed.push_back(batch(contenders, false, 1).front().front());
      in_place += median(placed) / 1e3;
      warm += median(batch(contenders, false).front()) / 1e3;
      ms.erase(ms.begin());  // the plan's first job: first_job_us
      const double figure = median(ms) / 1e3;
      state.SetIterationTime(figure);
      first += figure;
    }
    state.counters["warm_us"] = warm / static_cast<double>(state.iterations()) * 1e6;
    state.counters["x_warm"] = first / warm;
    state.counters["in_place_x_warm"] = in_place / warm;
    state.counters["target_warm_x"] = 2;
    state.counters["first_job_us"] = median(first_jobs) * 1e3;
    state.counters["execute_call_us"] = wall / static_cast<double>(state.iterations()) * 1e6;
    state.counters["floor_us"] = floor / static_cast<double>(state.iterations()) * 1e6;
    state.counters["x_floor"] = first / floor;
    state.counters["target_x"] = kFloorTargetX;
    state.counters["floor_paused_us"] = paused / static_cast<double>(state.iterations()) * 1e6;
    state.counters["paused_x_floor"] = paused / floor;
    state.counters["floor_filled_us"] = filled / static_cast<double>(state.iterations()) * 1e6;
    state.counters["filled_x_floor"] = filled / floor;
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

void common(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(sybench::kBatches)->ReportAggregatesOnly(true)->Unit(benchmark::kMicrosecond);
}

const int registered = [] {
  for (const int k : {3, 6}) {
    for (const Rank p : {4u, 8u, 16u, 32u, 64u}) {
      for (const ScheduleKind kind : all_schedule_kinds()) {
        const std::string line =
            "BM_Redistribute/K:" + std::to_string(k) + "/procs:" + std::to_string(p) + "/" + std::string(name(kind));
        benchmark::RegisterBenchmark(line.c_str(), BM_Redistribute, k, p, kind)->Apply(common);
      }
    }
  }
  for (const ScheduleKind kind : all_schedule_kinds()) {
    const std::string line = "BM_RedistributeScaling/K:3/" + std::string(name(kind));
    benchmark::RegisterBenchmark(line.c_str(), BM_RedistributeScaling, kind)->Apply(common);
  }
  for (const Rank p : {2u, 4u, 8u}) {
    const std::string line = "BM_RedistributeVsFloor/fig9/procs:" + std::to_string(p);
    benchmark::RegisterBenchmark(line.c_str(), BM_RedistributeVsFloor, std::string("fig9"), p)->Apply(common);
  }
  for (const Rank p : {2u, 4u, 8u}) {
    const std::string line = "BM_RedistributeFirstRun/fig9/procs:" + std::to_string(p);
    benchmark::RegisterBenchmark(line.c_str(), BM_RedistributeFirstRun, p)->Apply(common);
  }
  benchmark::RegisterBenchmark("BM_RedistributeVsFloor/grid2d/procs:4", BM_RedistributeVsFloor, std::string("grid2d"),
                               4u)
      ->Apply(common);
  return 0;
}();

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(
      argc, argv, "redistribution: Time = one redistribution of Fig. 9's 120000-element array (median of a batch)");
}
