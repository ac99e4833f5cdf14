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
//                               the scaling target: K = 3 on 4 processes
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
// faults_per_run: page faults (minor + major, getrusage(RUSAGE_SELF): the
// runtime's workers are threads of this program) during the batches' jobs, set-up
// included, divided by the runs in them, figure and baseline alike.
//
// Every run verifies every element of every target, outside the clock.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
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
using namespace switchyard::redistribution;

namespace {

constexpr Index kElements = 120000;
constexpr int kRuns = 10;  // redistributions per batch and schedule
constexpr int kPlans = 5;  // plan builds timed per line
constexpr double kScalingTargetX = 1.5;

struct Fig9 {
  Layout src, dst;
  std::vector<std::vector<double>> in, want, out;
};

// The arrays of one (K, P), built once for the program.
Fig9& fig9(int k, Rank p) {
  static std::map<std::pair<int, Rank>, Fig9> cases;
  auto it = cases.find({k, p});
  if (it != cases.end()) return it->second;
  const Index b = k == 3 ? 6 : 12;
  Fig9 c{Layout({kElements}, Distribution{{{DimKind::cyclic, b}}, {p}}),
         Layout({kElements}, Distribution{{{DimKind::cyclic, 2}}, {p}}), {}, {}, {}};
  std::vector<double> global(kElements);
  for (std::size_t e = 0; e < global.size(); ++e) global[e] = static_cast<double>(e);
  c.in = c.src.scatter(global);
  c.want = c.dst.scatter(global);
  c.out = c.want;
  return cases.emplace(std::make_pair(k, p), std::move(c)).first->second;
}

using sybench::Clock;

// One plan of a batch and the arrays it moves.
struct Contender {
  const RedistributionPlan* plan;
  Fig9* arrays;
};

// One batch: a job of as many processes as the largest plan needs, in which,
// kRuns times, every contender runs in turn, each run after a barrier and timed
// inside the processes; after each run its targets check their blocks, outside
// the clock. A process beyond a plan's processes() returns from its run at once.
// own_buffers: each process makes its staging memory (RedistributionBuffers)
// once per plan, before the runs; otherwise every run allocates its own, as the
// CLI does. Returns, per contender, the ms of each run, from the first of the
// plan's processes leaving the barrier to the last one done.
std::vector<std::vector<double>> batch(std::span<const Contender> contenders, bool own_buffers) {
  Rank n = 0;
  for (const Contender& c : contenders) n = std::max(n, c.plan->processes());
  const std::size_t runs = kRuns * contenders.size();
  SpanTimer timer(n, static_cast<std::uint32_t>(runs));
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
          Fig9& c = *contenders[k].arrays;
          std::span<const double> in;
          std::span<double> out;
          if (r < c.in.size()) in = c.in[r];
          if (r < c.out.size()) out = c.out[r];
          std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
          co_await p.barrier();
          timer.start(static_cast<std::uint32_t>(run), r);
          if (staging[k]) {
            co_await plan.run(p, in, out, *staging[k]);
          } else {
            co_await plan.run(p, in, out);
          }
          timer.end(static_cast<std::uint32_t>(run), r);
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
    const auto span = timer.span(static_cast<std::uint32_t>(run), contenders[k].plan->processes());
    ms[k].push_back(std::chrono::duration<double, std::milli>(span).count());
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
    Fig9& c = fig9(k, p);
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

// The scaling target for Fig. 9 (K = 3): 4 processes take at most
// 1.5 times as long as 8. Both run in every batch, alternately in one job of 8
// processes, through the run overload without caller-owned staging memory.
void BM_RedistributeScaling(benchmark::State& state, ScheduleKind kind) {
  try {
    Fig9& four = fig9(3, 4);
    Fig9& eight = fig9(3, 8);
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
  return 0;
}();

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(argc, argv,
                       "redistribution: Time = one redistribution of Fig. 9's 120000-element array (median of a batch)");
}
