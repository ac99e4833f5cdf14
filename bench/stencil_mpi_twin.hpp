#pragma once
// The baselines of the stencil benchmarks: their plain-MPI twin
// (stencil_mpi.cpp), run from a benchmark program through mpirun; the
// sequential sweeps every stencil line is checked against; and their compute
// limit, half the sequential sweep (a perfect split on the two cores). A program that includes this header gets
// SWITCHYARD_STENCIL_MPI and SWITCHYARD_MPIRUN from bench/CMakeLists.txt
// where MPI was found.

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "stencil_kernel.hpp"

namespace stencil {

#if defined(SWITCHYARD_STENCIL_MPI) && defined(SWITCHYARD_MPIRUN)
inline constexpr const char* kMpiProgram = SWITCHYARD_STENCIL_MPI;
inline constexpr const char* kMpirun = SWITCHYARD_MPIRUN;
#else
inline constexpr const char* kMpiProgram = nullptr;
inline constexpr const char* kMpirun = nullptr;
#endif

// The whole grid after `iterations` sweeps, made once per program.
template <int Iterations>
const std::vector<double>& reference() {
  static const std::vector<double> grid = sequential(Iterations);
  return grid;
}

// Seconds per iteration of the sequential sweeps (stencil_kernel.hpp) of the
// whole grid on one pinned thread, / 2: the stencil on two cores with no
// halo and a perfect split. Throws if the sweeps differ from reference().
template <int Iterations>
double half_sequential_iteration() {
  sybench::ChunkTimer timer(Iterations / sybench::kChunks);
  sybench::run_pinned(sybench::kCoreA, [&] {
    Block all(0, kN);
    timer.start();
    for (int k = 0; k < Iterations; ++k) {
      all.sweep();
      if ((k + 1) % (Iterations / sybench::kChunks) == 0) timer.lap();
    }
    if (!all.matches(reference<Iterations>())) {
      throw std::runtime_error("stencil: the sequential sweeps differ from the reference");
    }
  });
  return timer.per_op() / 2;
}

// stencil_mpi's median us per iteration over kBatches repetitions of
// `iterations` sweeps on 2 ranks, one per core; nullopt where it was not
// built or its run failed (`who` and why on stderr).
inline std::optional<double> mpi_iteration_us(int iterations, const char* who) {
  if (!kMpiProgram) return std::nullopt;
  const std::string command = sybench::mpirun_two_ranks(
      kMpirun, kMpiProgram, std::to_string(iterations) + " " + std::to_string(sybench::kBatches));
  return sybench::baseline_median_us(command, who);
}

}  // namespace stencil
