#pragma once
// The plain-MPI twin of the stencil benchmarks (stencil_mpi.cpp), run from a
// benchmark program through mpirun, and the sequential sweeps every stencil
// line is checked against. A program that includes this header gets
// SWITCHYARD_STENCIL_MPI and SWITCHYARD_MPIRUN from bench/CMakeLists.txt
// where MPI was found.

#include <optional>
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
