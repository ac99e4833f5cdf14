// A 2-D 5-point Jacobi stencil in point-to-point form, beside its plain-MPI
// twin and its compute floor.
//
//   BM_Stencil2D_P2P   512 x 512 doubles (stencil_kernel.hpp), a block of rows
//                      per process, two processes on cores 0 and 1. Every
//                      iteration, as a new user writes it from an MPI program:
//                      post_recv_into the two ghost rows, post_send the two
//                      edge rows (4 KiB each: single copy), wait_all the
//                      receives and the sends, sweep. Time = one iteration
//                      (rank 0's median chunk of a batch of kIterations); after
//                      each batch every process checks its rows bit for bit
//                      against the sequential sweeps. iterations_per_s = 1 / Time.
//                      limit_us: the sequential sweep of the whole grid on one
//                      pinned thread, per iteration, / 2 (a perfect split on two
//                      cores, no halo), in the same batch. mpi_us: stencil_mpi,
//                      the same program in plain MPI (MPI_Irecv, MPI_Isend,
//                      MPI_Waitall, 2 ranks bound to the two cores), one run
//                      of kBatches repetitions per repetition of the line, before
//                      its batches; x_mpi = Time / mpi_us (<= 1: at least MPI's
//                      iterations per second), target_x_mpi = 1; mpi_x_limit =
//                      mpi_us / limit_us, MPI's twin against the same limit.
//
// Where stencil_mpi or mpirun was not found at build time the line has no
// mpi_us; where its run failed, mpi_failed = 1 (why on stderr).

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "stencil_kernel.hpp"
#include "stencil_mpi_twin.hpp"

using namespace switchyard;

namespace {

constexpr int kIterations = 200;  // per batch: kChunks chunks of 10
constexpr double kTargetXMpi = 1;

const std::vector<double>& reference() { return stencil::reference<kIterations>(); }

// Seconds per iteration of the point-to-point stencil on two processes (rank 0's median chunk).
double p2p_iteration() {
  constexpr int kProcesses = 2;
  sybench::ChunkTimer timer(kIterations / sybench::kChunks);
  std::array<bool, kProcesses> right{};
  sybench::runtime().run(
      kProcesses,
      [&](Process& p) -> Task<void> {
        const int me = static_cast<int>(p.rank());
        const auto [first, rows] = stencil::rows_of(me, kProcesses);
        stencil::Block block(first, rows);
        const bool has_up = me > 0, has_down = me + 1 < kProcesses;
        co_await p.barrier();
        if (me == 0) timer.start();
        for (int k = 0; k < kIterations; ++k) {
          std::array<RecvTicket, 2> received;
          std::array<SendTicket, 2> sent;
          if (has_up) received[0] = p.post_recv_into(me - 1, block.ghost_bytes(0));
          if (has_down) received[1] = p.post_recv_into(me + 1, block.ghost_bytes(rows + 1));
          if (has_up) sent[0] = p.post_send(me - 1, block.row_bytes(1));
          if (has_down) sent[1] = p.post_send(me + 1, block.row_bytes(rows));
          co_await p.wait_all(received);
          co_await p.wait_all(sent);
          block.sweep();
          if (me == 0 && (k + 1) % (kIterations / sybench::kChunks) == 0) timer.lap();
        }
        right[me] = block.matches(reference());
      },
      sybench::placed({sybench::kCoreA, sybench::kCoreB}));
  for (std::size_t r = 0; r < right.size(); ++r) {
    if (!right[r])
      throw std::runtime_error("stencil: rank " + std::to_string(r) + "'s rows differ from the sequential sweeps");
  }
  return timer.per_op();
}

void BM_Stencil2D_P2P(benchmark::State& state) {
  const std::optional<double> mpi_us = stencil::mpi_iteration_us(kIterations, "bench_stencil");
  double figures = 0, limits = 0;
  try {
    for (auto _ : state) {
      limits += stencil::half_sequential_iteration<kIterations>();
      const double f = p2p_iteration();
      state.SetIterationTime(f);
      figures += f;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double n = static_cast<double>(state.iterations());
  const double figure_us = figures / n * 1e6;
  state.counters["iterations_per_s"] = 1e6 / figure_us;
  state.counters["limit_us"] = limits / n * 1e6;
  state.counters["x_limit"] = figures / limits;
  if (mpi_us) {
    state.counters["mpi_us"] = *mpi_us;
    state.counters["x_mpi"] = figure_us / *mpi_us;
    state.counters["target_x_mpi"] = kTargetXMpi;
    state.counters["mpi_x_limit"] = *mpi_us / state.counters["limit_us"];
  } else if (stencil::kMpiProgram) {
    state.counters["mpi_failed"] = 1;
  }
}

BENCHMARK(BM_Stencil2D_P2P)
    ->UseManualTime()
    ->Iterations(sybench::kBatches)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(argc, argv,
                       "stencil: Time = us per iteration (halo exchange + sweep) of a 512 x 512 Jacobi on 2 cores");
}
