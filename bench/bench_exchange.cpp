// All-to-many exchanges on the runtime: each scheduler against AC, and the two
// ways of Generate_Recv.
//
//   BM_Exchange/<scheduler>/bytes:B   one exchange of a Fig. 7 matrix, n = 32
//                               processes round robin on cores 0 and 1, d = 8
//                               messages of B bytes per process (1 KiB: eager,
//                               copied through the mailbox; 64 KiB: single copy).
//                               Time = the exchange's communication time, from the
//                               first process leaving the barrier before it to the
//                               last one done, median of kExchanges exchanges in
//                               the batch (schedule construction and Generate_Recv
//                               are outside it, as in the CLI's comm column).
//                               Baseline beside it, measured in the same batch right
//                               before: AC on the same matrix. Counters: ac_us, x_ac =
//                               Time / AC (below 1: the scheduler beats AC),
//                               phases (static), inquiries (drsn, per exchange),
//                               comp_us (make_schedule on one thread; drsn:
//                               Generate_Recv by active messages).
//   BM_GenerateRecv/<method>/n:N      one Generate_Recv (d = 8), by concatenation
//                               (allgather of every sending vector) or by active
//                               messages plus a vector sum (Wang-Lin-Ranka Fig. 1);
//                               each batch times both methods, the other one is the
//                               baseline beside it: other_us, x_other = Time / other.
//
// Every exchange verifies every payload byte it received, and every
// Generate_Recv result is checked against the matrix's column, outside the clock.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <switchyard/schedulers/generate_recv.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>
#include <vector>

#include "bench_common.hpp"

using namespace switchyard;
using namespace switchyard::schedulers;

namespace {

constexpr Rank kProcesses = 32;
constexpr Rank kDensity = 8;
constexpr std::uint32_t kExchanges = 10;  // per scheduler and batch
constexpr std::uint32_t kCalls = 20;      // Generate_Recv calls per method and batch

void BM_Exchange(benchmark::State& state, const std::string& scheduler) {
  const auto bytes = static_cast<std::uint64_t>(state.range(0));
  const CommMatrix m = fig7_matrix(kProcesses, kDensity, bytes, 42);
  ExchangeOptions options;
  options.schedulers = {"ac", scheduler};
  options.repeat = kExchanges;
  options.run_options = sybench::round_robin();
  options.time_generate_recv = false;
  double figure = 0, ac = 0, comp = 0, inquiries = 0, phases = 0;
  try {
    for (auto _ : state) {
      ++options.seed;  // new payloads, and new DRS_N orders, every batch
      const ExchangeReport report = run_exchange(sybench::runtime(), m, options);
      const SchedulerResult& r = report.results[1];
      state.SetIterationTime(r.comm_ms.median / 1e3);
      figure += r.comm_ms.median;
      ac += report.results[0].comm_ms.median;
      comp += r.schedule_ms.median;
      if (r.inquiries) inquiries += static_cast<double>(*r.inquiries);
      if (r.phases) phases += static_cast<double>(*r.phases);
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ac_us"] = ac / n * 1e3;
  state.counters["x_ac"] = figure / ac;
  state.counters["comp_us"] = comp / n * 1e3;
  if (phases > 0) state.counters["phases"] = phases / n;
  if (inquiries > 0) state.counters["inquiries"] = inquiries / n;
}

// Medians of kCalls timed calls of each method, in one job; each call from a
// barrier to the last process holding its receiving vector.
struct RecvTimes {
  double concat_s = 0, am_s = 0;
};

RecvTimes generate_recv_times(const CommMatrix& m) {
  const Rank n = m.size();
  std::vector<std::vector<MatrixEntry>> columns(n);
  for (Rank j = 0; j < n; ++j) columns[j] = m.column(j);
  GenerateRecvByActiveMessages generate(n);
  RunOptions options = sybench::round_robin();
  generate.install(options);
  using Clock = sybench::Clock;
  std::vector<Clock::time_point> start(std::size_t{2} * kCalls * n), end(start.size());
  sybench::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        for (std::uint32_t call = 0; call < 2 * kCalls; ++call) {
          co_await p.barrier();
          start[std::size_t{call} * n + me] = Clock::now();
          const bool am = call % 2;
          // Not `am ? co_await ... : co_await ...`: GCC 12 destroys the temporary Task twice there.
          std::vector<MatrixEntry> recvl;
          if (am) {
            recvl = co_await generate.run(p, m.row(me));
          } else {
            recvl = co_await generate_recv_concat(p, m.row(me));
          }
          end[std::size_t{call} * n + me] = Clock::now();
          const bool right = std::equal(
              recvl.begin(), recvl.end(), columns[me].begin(), columns[me].end(),
              [](const MatrixEntry& a, const MatrixEntry& b) { return a.peer == b.peer && a.bytes == b.bytes; });
          if (!right) {
            throw std::runtime_error(std::string("Generate_Recv by ") + (am ? "active messages" : "concatenation") +
                                     ": rank " + std::to_string(me) + " got the wrong receiving vector");
          }
        }
      },
      options);
  std::vector<double> concat, am;
  for (std::uint32_t call = 0; call < 2 * kCalls; ++call) {
    const auto from = start.begin() + static_cast<std::ptrdiff_t>(std::size_t{call} * n);
    const auto to = end.begin() + static_cast<std::ptrdiff_t>(std::size_t{call} * n);
    (call % 2 ? am : concat)
        .push_back(sybench::seconds_between(*std::min_element(from, from + n), *std::max_element(to, to + n)));
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(concat), median(am)};
}

void BM_GenerateRecv(benchmark::State& state, bool by_active_messages) {
  const auto n = static_cast<Rank>(state.range(0));
  const CommMatrix m = fig7_matrix(n, kDensity, 1024, 7);
  double figure = 0, other = 0;
  try {
    for (auto _ : state) {
      const RecvTimes t = generate_recv_times(m);
      const double mine = by_active_messages ? t.am_s : t.concat_s;
      state.SetIterationTime(mine);
      figure += mine;
      other += by_active_messages ? t.concat_s : t.am_s;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["other_us"] = other / iterations * 1e6;
  state.counters["x_other"] = figure / other;
}

void common(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(sybench::kBatches)->ReportAggregatesOnly(true)->Unit(benchmark::kMicrosecond);
}

const int registered = [] {
  for (const std::string& name : default_exchange_schedulers()) {
    benchmark::RegisterBenchmark(("BM_Exchange/" + name).c_str(), BM_Exchange, name)
        ->Apply(common)
        ->ArgName("bytes")
        ->Arg(1024)
        ->Arg(65536);
  }
  for (const bool am : {false, true}) {
    benchmark::RegisterBenchmark(am ? "BM_GenerateRecv/am" : "BM_GenerateRecv/concat", BM_GenerateRecv, am)
        ->Apply(common)
        ->ArgName("n")
        ->Arg(32)
        ->Arg(128)
        ->Arg(512);
  }
  return 0;
}();

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(
      argc, argv, "exchange: Time = one all-to-many exchange (BM_Exchange) or one Generate_Recv (BM_GenerateRecv)");
}
