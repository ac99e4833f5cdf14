// Collective latency for 2, 32 and 512 processes on the 2 cores (round robin),
// against a rendezvous of two pinned std::threads.
//
//   BM_StdBarrier2Threads       std::barrier (C++20) of two std::threads pinned to
//                               cores 0 and 1; Time = one arrive_and_wait. The limit
//                               the issue names: a 2-core rendezvous with the
//                               standard library's primitive.
//   BM_SpinBarrier2Threads      the same rendezvous with a spinning sense-reversal
//                               barrier (one atomic counter): the hardware floor,
//                               about one cache-line round trip.
//   BM_Barrier/procs:N          N processes, round robin on cores 0 and 1, call
//                               p.barrier() K times; Time = one barrier.
//                               limit_ns = std::barrier of 2 threads measured in the
//                               same batch (x_limit = Time / limit_ns), floor_ns =
//                               the spinning barrier, also measured in the same
//                               batch (x_floor); target 5 us for N = 32.
//   BM_Allgather8B/procs:N      the same with p.allgather of 8 bytes per process;
//                               every process checks the gathered ranks in its first
//                               and last call.

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace switchyard;
using sybench::Clock;
using sybench::kCoreA;
using sybench::kCoreB;

namespace {

// Operations per chunk; a batch is sybench::kChunks chunks (see bench_common.hpp).
constexpr int kStdBarrierRounds = 200;  // std::barrier blocks in the kernel: microseconds per round
constexpr int kSpinBarrierRounds = 1000;
constexpr double kBarrier32TargetNs = 5000;

// Collective calls per chunk: fewer for more processes, so that a chunk takes about 0.1-1 ms.
int calls_for(int processes) { return std::max(1, 500 / processes); }

// Rank 0 (thread on core 0) times chunks of `per_chunk` rendezvous of the two threads.
template <class Rendezvous>
double two_thread_rendezvous(int per_chunk, Rendezvous&& rendezvous) {
  sybench::ChunkTimer timer(per_chunk);
  const int total = sybench::kChunks * per_chunk;
  sybench::run_pinned_pair(
      kCoreA,
      [&] {
        rendezvous();
        timer.start();
        for (int i = 0; i < total; ++i) {
          rendezvous();
          if ((i + 1) % per_chunk == 0) timer.lap();
        }
      },
      kCoreB,
      [&] {
        rendezvous();
        for (int i = 0; i < total; ++i) rendezvous();
      });
  return timer.per_op();
}

double std_barrier_time() {
  std::barrier<> sync(2);
  return two_thread_rendezvous(kStdBarrierRounds, [&] { sync.arrive_and_wait(); });
}

double spin_barrier_time() {
  sybench::SpinBarrier sync;
  return two_thread_rendezvous(kSpinBarrierRounds, [&] { sync.arrive_and_wait(2); });
}

enum class Op { kBarrier, kAllgather };

// Seconds per collective call among `processes` processes, round robin on the two
// cores; rank 0 times chunks of `per_chunk` calls.
double collective_time(Op op, int processes, int per_chunk) {
  sybench::ChunkTimer timer(per_chunk);
  const int calls = sybench::kChunks * per_chunk;
  sybench::runtime().run(
      static_cast<std::uint64_t>(processes),
      [&](Process& p) -> Task<void> {
        const std::uint64_t mine = p.rank();
        const auto mine_bytes = std::as_bytes(std::span<const std::uint64_t, 1>(&mine, 1));
        auto check = [&](const std::vector<std::byte>& all) {
          if (all.size() != p.size() * sizeof(std::uint64_t)) {
            throw std::runtime_error("allgather: " + std::to_string(all.size()) + " bytes for " +
                                     std::to_string(p.size()) + " processes of 8");
          }
          for (Rank r = 0; r < p.size(); ++r) {
            std::uint64_t v;
            std::memcpy(&v, all.data() + r * sizeof v, sizeof v);
            if (v != r)
              throw std::runtime_error("allgather: slot " + std::to_string(r) + " holds " + std::to_string(v));
          }
        };
        const bool timing = p.rank() == 0;
        co_await p.barrier();
        if (timing) timer.start();
        for (int i = 0; i < calls; ++i) {
          if (op == Op::kBarrier) {
            co_await p.barrier();
          } else {
            auto all = co_await p.allgather(mine_bytes);
            if (i == 0 || i == calls - 1) check(all);
          }
          if (timing && (i + 1) % per_chunk == 0) timer.lap();
        }
      },
      sybench::round_robin());
  return timer.per_op();
}

void BM_StdBarrier2Threads(benchmark::State& state) {
  try {
    for (auto _ : state) state.SetIterationTime(std_barrier_time());
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

void BM_SpinBarrier2Threads(benchmark::State& state) {
  try {
    for (auto _ : state) state.SetIterationTime(spin_barrier_time());
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

void collective(benchmark::State& state, Op op) {
  const int processes = static_cast<int>(state.range(0));
  const int per_chunk = calls_for(processes);
  double figure = 0, limit = 0, floor = 0;
  try {
    for (auto _ : state) {
      const double std_rendezvous = std_barrier_time();
      const double spin_rendezvous = spin_barrier_time();
      const double call = collective_time(op, processes, per_chunk);
      state.SetIterationTime(call);
      figure += call;
      limit += std_rendezvous;
      floor += spin_rendezvous;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double n = static_cast<double>(state.iterations());
  sybench::report_vs_limit(state, figure / n, limit / n,
                           op == Op::kBarrier && processes == 32 ? kBarrier32TargetNs : 0);
  state.counters["floor_ns"] = floor / n * 1e9;
  state.counters["x_floor"] = figure / floor;
}

void BM_Barrier(benchmark::State& state) { collective(state, Op::kBarrier); }
void BM_Allgather8B(benchmark::State& state) { collective(state, Op::kAllgather); }

void common(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(sybench::kBatches)->ReportAggregatesOnly(true)->Unit(benchmark::kNanosecond);
}

BENCHMARK(BM_StdBarrier2Threads)->Apply(common);
BENCHMARK(BM_SpinBarrier2Threads)->Apply(common);
BENCHMARK(BM_Barrier)->Apply(common)->ArgName("procs")->Arg(2)->Arg(32)->Arg(512);
BENCHMARK(BM_Allgather8B)->Apply(common)->ArgName("procs")->Arg(2)->Arg(32)->Arg(512);

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(argc, argv, "collectives: Time = ns per collective call (per rendezvous)");
}
