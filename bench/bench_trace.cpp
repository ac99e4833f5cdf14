// What a trace costs: the same small-message exchange with tracing off and on.
//
//   BM_ExchangeTrace/<scheduler>
//       One exchange of a Fig. 7 matrix, 32 processes round robin on cores 0
//       and 1, 8 messages of 16 bytes per process (eager, through the rings:
//       where per-message overhead shows most): the workload of bench_exchange's
//       BM_Exchange/n:32/d:8/bytes:16. Time = the exchange's communication time
//       with a trace recorded, as run_exchange measures it (first process out
//       of the barrier to the last one done), median of 20 exchanges in one job
//       per batch, every payload byte verified outside the clock. Beside it, in
//       the same batch right before, the same exchanges with tracing off:
//       off_us, x_off = Time / off (the cost of recording). Counters: events
//       recorded per exchange, dropped (0 unless a core's buffer filled).
//
// "Off" is the code every job runs: one branch per recording site on a pointer
// the job sets once. To set it beside a build without any trace code, run
// bench_exchange of the commit before traces with
// --benchmark_filter='BM_Exchange/n:32/d:8/bytes:16/(cgm|drsn|ac)$' in the same
// session, alternating with this program.

#include <memory>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <switchyard/trace.hpp>

#include "bench_common.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

constexpr Rank kProcesses = 32, kDensity = 8;
constexpr std::uint64_t kBytes = 16;
constexpr std::uint32_t kExchanges = 20;

void BM_ExchangeTrace(benchmark::State& state, const std::string& scheduler) {
  const CommMatrix m = fig7_matrix(kProcesses, kDensity, kBytes, 1);
  ExchangeOptions options;
  options.schedulers = {scheduler};
  options.repeat = kExchanges;
  options.run_options = sybench::round_robin();
  options.time_generate_recv = false;
  double figure = 0, off = 0, events = 0, dropped = 0;
  try {
    for (auto _ : state) {
      ++options.seed;
      options.run_options.trace = nullptr;
      off += run_exchange(sybench::runtime(), m, options).results[0].comm_ms.median / 1e3;
      TraceLog log;
      options.run_options.trace = &log;
      const double s = run_exchange(sybench::runtime(), m, options).results[0].comm_ms.median / 1e3;
      state.SetIterationTime(s);
      figure += s;
      events += static_cast<double>(log.events());
      dropped += static_cast<double>(log.dropped());
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double batches = static_cast<double>(state.iterations());
  state.counters["off_us"] = off / batches * 1e6;
  state.counters["x_off"] = figure / off;
  state.counters["events"] = events / batches / kExchanges;
  state.counters["dropped"] = dropped / batches;
}

const int registered = [] {
  for (const char* scheduler : {"cgm", "drsn", "ac"}) {
    benchmark::RegisterBenchmark((std::string("BM_ExchangeTrace/") + scheduler).c_str(), BM_ExchangeTrace,
                                 std::string(scheduler))
        ->UseManualTime()
        ->Iterations(sybench::kBatches)
        ->ReportAggregatesOnly(true)
        ->Unit(benchmark::kMicrosecond);
  }
  return 0;
}();

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(argc, argv, "trace: Time = one exchange recorded into a trace; off_us = the same, not recorded");
}
