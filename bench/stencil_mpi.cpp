// The plain-MPI twin of bench_stencil's BM_Stencil2D_P2P: the same 2-D 5-point
// Jacobi sweeps of a 512 x 512 grid (stencil_kernel.hpp), a block of rows per
// rank, written as an MPI program is: post the halo receives (MPI_Irecv),
// post the sends of the edge rows (MPI_Isend), wait for all (MPI_Waitall),
// sweep. Two ranks, one per core:
//
//   mpirun --allow-run-as-root -np 2 --bind-to core --map-by core stencil_mpi ITERATIONS REPETITIONS
//
// Each repetition starts from the initial grid and times its ITERATIONS
// sweeps on rank 0 in kChunks chunks (after a barrier); its figure is the
// median chunk per iteration, and every rank then checks its rows bit for bit
// against the sequential sweeps. Prints one JSON line on rank 0:
//   {"iterations": ..., "median_us": <median over the repetitions, us per iteration>}
// and exits 1 (after MPI_Abort) on a wrong value.

#include <mpi.h>
#include <switchyard/median.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "stencil_kernel.hpp"

namespace {

constexpr int kChunks = 10;

// Seconds per iteration in the median chunk of one repetition (rank 0's), after checking the result.
double repetition(int me, int ranks, int iterations, const std::vector<double>& reference) {
  const auto [first, rows] = stencil::rows_of(me, ranks);
  stencil::Block block(first, rows);
  const int up = me - 1, down = me + 1 < ranks ? me + 1 : -1;
  const int per_chunk = std::max(1, iterations / kChunks);
  std::vector<double> laps;
  MPI_Barrier(MPI_COMM_WORLD);
  double last = MPI_Wtime();
  for (int k = 0; k < iterations; ++k) {
    std::array<MPI_Request, 4> requests;
    int n = 0;
    if (up >= 0) MPI_Irecv(block.row(0).data(), stencil::kN, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &requests[n++]);
    if (down >= 0) {
      MPI_Irecv(block.row(rows + 1).data(), stencil::kN, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &requests[n++]);
    }
    if (up >= 0) MPI_Isend(block.row(1).data(), stencil::kN, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &requests[n++]);
    if (down >= 0) MPI_Isend(block.row(rows).data(), stencil::kN, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &requests[n++]);
    MPI_Waitall(n, requests.data(), MPI_STATUSES_IGNORE);
    block.sweep();
    if ((k + 1) % per_chunk == 0) {
      const double now = MPI_Wtime();
      laps.push_back((now - last) / per_chunk);
      last = now;
    }
  }
  if (!block.matches(reference)) {
    std::fprintf(stderr, "stencil_mpi: rank %d: rows %d to %d differ from the sequential sweeps\n", me, first,
                 first + rows - 1);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return switchyard::median(laps);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 0;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 0;
  if (iterations < 1 || repetitions < 1 || ranks > stencil::kN) {
    if (me == 0) {
      std::fprintf(stderr,
                   "stencil_mpi: needs a positive iteration count, a positive repetition count and at most %d ranks\n"
                   "usage: mpirun -np 2 --bind-to core --map-by core stencil_mpi ITERATIONS REPETITIONS\n",
                   stencil::kN);
    }
    MPI_Finalize();
    return 2;
  }
  const std::vector<double> reference = stencil::sequential(iterations);
  repetition(me, ranks, iterations, reference);  // warm-up: connections, first touches
  std::vector<double> figures;
  for (int r = 0; r < repetitions; ++r) figures.push_back(repetition(me, ranks, iterations, reference));
  if (me == 0)
    std::printf("{\"iterations\": %d, \"median_us\": %.3f}\n", iterations, switchyard::median(figures) * 1e6);
  MPI_Finalize();
  return 0;
}
