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
//                               schedule part alone).
//
// Every run verifies every element of every target, outside the clock.

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <vector>

#include "bench_common.hpp"

using namespace switchyard;
using namespace switchyard::redistribution;

namespace {

constexpr Index kElements = 120000;
constexpr int kRuns = 10;  // redistributions per batch and schedule
constexpr int kPlans = 5;  // plan builds timed per line

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

using sybench::Clock;

struct BatchTimes {
  std::vector<double> figure, naive;  // ms per run
};

// One batch: a job in which every process runs, kRuns times, the naive plan
// (if given) and then the figure's, each after a barrier and timed inside the
// processes; after each run a target checks its block, outside the clock.
BatchTimes batch(const RedistributionPlan& plan, const RedistributionPlan* naive, Fig9& c) {
  const Rank n = plan.processes();
  const int kinds = naive ? 2 : 1;
  const std::size_t runs = static_cast<std::size_t>(kRuns * kinds);
  std::vector<Clock::time_point> start(runs * n), end(runs * n);
  sybench::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank r = p.rank();
        std::span<const double> in;
        std::span<double> out;
        const std::vector<double>* want = nullptr;
        if (r < c.in.size()) in = c.in[r];
        if (r < c.out.size()) {
          out = c.out[r];
          want = &c.want[r];
        }
        RedistributionBuffers mine(plan, r);
        std::optional<RedistributionBuffers> theirs;
        if (naive) theirs.emplace(*naive, r);
        for (std::size_t run = 0; run < runs; ++run) {
          const bool baseline = naive && run % 2 == 0;
          std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
          co_await p.barrier();
          start[run * n + r] = Clock::now();
          if (baseline) {
            co_await naive->run(p, in, out, *theirs);
          } else {
            co_await plan.run(p, in, out, mine);
          }
          end[run * n + r] = Clock::now();
          if (want && !std::equal(out.begin(), out.end(), want->begin())) {
            throw std::runtime_error("redistribution with schedule " +
                                     std::string(name(baseline ? naive->kind() : plan.kind())) + ": target " +
                                     std::to_string(r) + " holds a wrong element");
          }
        }
      },
      sybench::round_robin());
  BatchTimes t;
  for (std::size_t run = 0; run < runs; ++run) {
    const auto from = start.begin() + static_cast<std::ptrdiff_t>(run * n);
    const auto to = end.begin() + static_cast<std::ptrdiff_t>(run * n);
    const double ms = std::chrono::duration<double, std::milli>(*std::max_element(to, to + n) -
                                                                *std::min_element(from, from + n))
                          .count();
    (naive && run % 2 == 0 ? t.naive : t.figure).push_back(ms);
  }
  return t;
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
    if (kind != ScheduleKind::naive) naive.emplace(c.src, c.dst, ScheduleKind::naive);
    double figure = 0, baseline = 0;
    for (auto _ : state) {
      const BatchTimes t = batch(*plan, naive ? &*naive : nullptr, c);
      const double m = median(t.figure);
      state.SetIterationTime(m / 1e3);
      figure += m;
      baseline += naive ? median(t.naive) : m;
    }
    const double n = static_cast<double>(state.iterations());
    state.counters["K"] = plan->com().max_sends();
    state.counters["steps"] = plan->steps();
    state.counters["contention_free"] = plan->contention_free() ? 1 : 0;
    state.counters["plan_us"] = median(plan_ms) * 1e3;
    state.counters["schedule_us"] = median(schedule_ms) * 1e3;
    state.counters["naive_us"] = baseline / n * 1e3;
    state.counters["x_naive"] = figure / baseline;
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

const int registered = [] {
  for (const int k : {3, 6}) {
    for (const Rank p : {4u, 8u, 16u, 32u, 64u}) {
      for (const ScheduleKind kind : all_schedule_kinds()) {
        const std::string line =
            "BM_Redistribute/K:" + std::to_string(k) + "/procs:" + std::to_string(p) + "/" + std::string(name(kind));
        benchmark::RegisterBenchmark(line.c_str(), BM_Redistribute, k, p, kind)
            ->UseManualTime()
            ->Iterations(sybench::kBatches)
            ->ReportAggregatesOnly(true)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return 0;
}();

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(argc, argv,
                       "redistribution: Time = one redistribution of Fig. 9's 120000-element array (median of a batch)");
}
