// The baseline of examples/spmv.cpp: the same product, iterations and check
// as a plain MPI program, one block of rows per MPI rank, the halo moved with
// MPI_Irecv/MPI_Isend/MPI_Waitall as PETSc's and Tpetra's do (the lists are
// halo_maps()'s, the same as the switchyard example's). By default each
// iteration waits for its halo, then computes; --split computes the rows that
// read no ghost between the sends and the wait, as the example's split phase
// does: the overlap of PETSc's MatMult, which computes its diagonal block
// while the scatter moves (here whole rows, so each row's sum keeps its
// order). Run under mpirun:
//
//   mpirun -np P bench/spmv_mpi MATRIX.mtx [--iterations K] [--split]
//
// prints the time per iteration (the slowest rank's, between barriers) and the
// wrong entries against the sequential product.

#include <mpi.h>

#include <switchyard/halo/halo_exchange.hpp>

#include "spmv_kernel.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace syh = switchyard::halo;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::uint32_t iterations = 200;
  bool split = false;
  bool parsed = argc >= 2;
  for (int i = 2; parsed && i < argc; i += 2) {
    const std::string arg = argv[i], value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--split") {
      split = true;
      --i;  // takes no value
    } else if (arg == "--iterations" && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos &&
               value.size() < 10) {
      iterations = static_cast<std::uint32_t>(std::stoul(value));
      parsed = iterations > 0;
    } else {
      parsed = false;
    }
  }
  if (!parsed) {
    if (rank == 0) {
      std::fprintf(stderr, "usage: mpirun -np P spmv_mpi MATRIX.mtx [--iterations K] [--split] (K > 0)\n");
    }
    MPI_Finalize();
    return 2;
  }
  const auto a = syh::read_csr_matrix_market_file<double>(argv[1]);
  // The plans of the switchyard halo go unused: only its maps and local rows.
  const syh::HaloExchange<double> halo(a, syh::RowPartition::blocks(a.rows, static_cast<switchyard::Rank>(size)));
  const syh::HaloMap& m = halo.map(static_cast<switchyard::Rank>(rank));
  const syh::CsrMatrix<double> local = halo.local_rows(a, static_cast<switchyard::Rank>(rank));
  const double scale = spmv::steady_scale(a, iterations);

  const std::size_t n = m.owned.size();
  const spmv::RowSplit rows = split ? spmv::split_rows(local, n) : spmv::RowSplit{};
  std::vector<double> x(m.local_size()), y(n), packed(m.sent.size());
  for (std::size_t i = 0; i < n; ++i) x[i] = spmv::x0(m.owned[i]);
  std::vector<MPI_Request> requests(m.sources.size() + m.destinations.size());
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (std::uint32_t it = 0; it < iterations; ++it) {
    std::size_t r = 0;
    for (std::size_t s = 0; s < m.sources.size(); ++s) {
      MPI_Irecv(x.data() + n + m.source_start[s], static_cast<int>(m.source_start[s + 1] - m.source_start[s]),
                MPI_DOUBLE, static_cast<int>(m.sources[s]), 0, MPI_COMM_WORLD, &requests[r++]);
    }
    for (std::size_t k = 0; k < m.sent.size(); ++k) packed[k] = x[m.sent[k]];
    for (std::size_t d = 0; d < m.destinations.size(); ++d) {
      MPI_Isend(packed.data() + m.destination_start[d],
                static_cast<int>(m.destination_start[d + 1] - m.destination_start[d]), MPI_DOUBLE,
                static_cast<int>(m.destinations[d]), 0, MPI_COMM_WORLD, &requests[r++]);
    }
    if (split) {
      spmv::multiply_rows(local, rows.interior, x.data(), scale, y.data());  // reads no ghost
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
      spmv::multiply_rows(local, rows.boundary, x.data(), scale, y.data());
    } else {
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
      spmv::multiply(local, x.data(), scale, y.data());
    }
    std::copy(y.begin(), y.end(), x.begin());
  }
  double elapsed = MPI_Wtime() - start, slowest = 0;
  MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  // The sequential iterations, on every rank, for its own entries.
  double sequential_us = 0;
  const std::vector<double> xs = spmv::sequential(a, scale, iterations, sequential_us);
  long long wrong = 0, all_wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += x[i] != xs[m.owned[i]];
  MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf(
        "spmv_mpi: %s, %d ranks (one block each), %s, %u iterations: %.2f us per iteration; %lld wrong entries "
        "against the sequential product, which took %.2f us per iteration on rank 0; %zu of x's entries end "
        "subnormal or not finite\n",
        argv[1], size, split ? "split" : "whole", iterations, slowest * 1e6 / iterations, all_wrong, sequential_us,
        spmv::abnormal_entries(xs));
  }
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
