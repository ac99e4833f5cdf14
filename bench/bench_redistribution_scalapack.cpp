// The ScaLAPACK baseline of BM_RedistributeVsFloor (bench_redistribution.cpp):
// the same redistribution by pdgemr2d, ScaLAPACK's redistribution of a
// block-cyclic matrix between two process grids, one MPI rank per switchyard
// process.
//
//   mpirun --allow-run-as-root --oversubscribe -np P --bind-to core:overload-allowed --map-by core
//          bench_redistribution_scalapack CASE RUNS
//
// CASE  fig9      Fig. 9's 120000 doubles, cyclic(6)@P -> cyclic(2)@P: a
//                 120000 x 1 matrix on a P x 1 grid, row blocks of 6 -> 2.
//       grid2d    1000 x 1000, block,cyclic(2)@2x2 -> cyclic(3),block@4x1 (P = 4).
// The mapping. ScaLAPACK's matrices are column-major, switchyard's arrays
// row-major: array dimension 1 is the matrix's rows and dimension 0 its
// columns, so that a process holds its elements in the same order in its local
// array in both. The BLACS grids are column-major ("C"): grid row i1, column i0
// is MPI rank i0 P1 + i1, switchyard's process of coordinates (i0, i1). So rank
// r holds what switchyard process r holds, before and after.
//
// One run: the target filled with NaN, MPI_Barrier, then on the clock one
// pdgemr2d; time = latest end minus earliest start over the ranks (as in
// mpi_alltoallv_exchange.hpp). After each run, outside the clock, every rank
// checks every element it holds: element (i, j) of the matrix is i + j M, its
// index in the switchyard array.
//
// Prints one JSON line on stdout from rank 0:
//   {"program":"bench_redistribution_scalapack","case":"fig9","ranks":4,"runs":100,
//    "median_us":...,"min_us":...,"max_us":...}
// Exit status: 0, 1 if an element was wrong (the message says which), 2 on bad arguments.

#include <mpi.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <switchyard/schedulers/exchange.hpp>
#include <vector>

#include "mpi_alltoallv_exchange.hpp"

extern "C" {
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int rows, int columns);
void Cblacs_gridinfo(int context, int* rows, int* columns, int* row, int* column);
void Cblacs_gridexit(int context);
void Cblacs_exit(int keep_mpi);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);
void pdgemr2d_(const int* m, const int* n, double* a, const int* ia, const int* ja, const int* desca, double* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
}

namespace {

// A block-cyclic distribution of the M x N matrix: row blocks of mb over
// `rows` grid rows, column blocks of nb over `columns` grid columns.
struct Grid {
  int mb, nb, rows, columns;
};

struct Case {
  int m, n;
  Grid from, to;
};

std::optional<Case> case_named(const std::string& name, int ranks) {
  if (name == "fig9") return Case{120000, 1, {6, 1, ranks, 1}, {2, 1, ranks, 1}};
  if (name == "grid2d" && ranks == 4) return Case{1000, 1000, {2, 500, 2, 2}, {1000, 3, 1, 4}};
  return std::nullopt;
}

// This rank's part of the matrix under one grid: its BLACS context,
// descriptor and local array.
struct Local {
  int context = -1, row = -1, column = -1, rows = 0, columns = 0;
  int desc[9] = {};
  std::vector<double> a;

  Local(const Case& c, const Grid& g) {
    Cblacs_get(-1, 0, &context);
    Cblacs_gridinit(&context, "C", g.rows, g.columns);
    int grid_rows = 0, grid_columns = 0;
    Cblacs_gridinfo(context, &grid_rows, &grid_columns, &row, &column);
    const int zero = 0;
    rows = numroc_(&c.m, &g.mb, &row, &zero, &g.rows);
    columns = numroc_(&c.n, &g.nb, &column, &zero, &g.columns);
    const int lld = std::max(1, rows);
    int info = 0;
    descinit_(desc, &c.m, &c.n, &g.mb, &g.nb, &zero, &zero, &context, &lld, &info);
    a.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(columns),
             std::numeric_limits<double>::quiet_NaN());
  }
  // The global index of local index l along a dimension of blocks of b over p.
  static long global(int l, int b, int p, int mine) { return (static_cast<long>(l / b) * p + mine) * b + l % b; }
  // The value element (li, lj) of the local array holds: its switchyard index.
  double value(const Case& c, const Grid& g, int li, int lj) const {
    return static_cast<double>(global(li, g.mb, g.rows, row) + global(lj, g.nb, g.columns, column) * c.m);
  }
  void fill(const Case& c, const Grid& g) {
    for (int j = 0; j < columns; ++j) {
      for (int i = 0; i < rows; ++i) a[static_cast<std::size_t>(j) * rows + i] = value(c, g, i, j);
    }
  }
  // The first wrong element, described, or an empty string.
  std::string wrong(const Case& c, const Grid& g) const {
    for (int j = 0; j < columns; ++j) {
      for (int i = 0; i < rows; ++i) {
        const double got = a[static_cast<std::size_t>(j) * rows + i];
        if (got != value(c, g, i, j)) {
          return "local element (" + std::to_string(i) + ", " + std::to_string(j) + ") holds " + std::to_string(got) +
                 ", not " + std::to_string(value(c, g, i, j));
        }
      }
    }
    return {};
  }
};

// Microseconds of each run; false in `ok` if a rank held a wrong element.
std::vector<double> time_runs(const Case& c, int runs, int me, bool& ok) {
  Local from(c, c.from), to(c, c.to);
  from.fill(c, c.from);
  int all = -1;
  Cblacs_get(-1, 0, &all);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Cblacs_gridinit(&all, "C", ranks, 1);  // pdgemr2d's context: every process of both grids
  const int one = 1;
  std::vector<double> us;
  ok = true;
  for (int run = 0; run < runs && ok; ++run) {
    std::fill(to.a.begin(), to.a.end(), std::numeric_limits<double>::quiet_NaN());
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = sybench::now_ns();
    pdgemr2d_(&c.m, &c.n, from.a.data(), &one, &one, from.desc, to.a.data(), &one, &one, to.desc, &all);
    double span[2] = {-start, sybench::now_ns()};  // MPI_MAX of both: the earliest start and the latest end
    const std::string wrong = to.wrong(c, c.to);
    if (!wrong.empty()) std::fprintf(stderr, "pdgemr2d: run %d, rank %d: %s\n", run + 1, me, wrong.c_str());
    int bad = wrong.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, span, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ok = bad == 0;
    us.push_back((span[1] + span[0]) / 1e3);
  }
  Cblacs_gridexit(all);
  Cblacs_gridexit(from.context);
  Cblacs_gridexit(to.context);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int runs = 0;
  const char* runs_end = argc == 3 ? argv[2] + std::strlen(argv[2]) : nullptr;
  const bool runs_ok = argc == 3 && std::from_chars(argv[2], runs_end, runs).ptr == runs_end && runs > 0;
  const std::optional<Case> c = argc == 3 ? case_named(argv[1], ranks) : std::nullopt;
  if (!c || !runs_ok) {
    if (me == 0) {
      std::fprintf(stderr,
                   "bench_redistribution_scalapack: expected CASE (fig9, or grid2d on 4 ranks) and RUNS (a positive "
                   "whole number)\nusage: mpirun -np P bench_redistribution_scalapack CASE RUNS\n");
    }
    MPI_Finalize();
    return 2;
  }
  bool ok = false;
  const switchyard::schedulers::TimeStats t = switchyard::schedulers::summarize(time_runs(*c, runs, me, ok));
  if (ok && me == 0) {
    std::printf(
        "{\"program\":\"bench_redistribution_scalapack\",\"case\":\"%s\",\"ranks\":%d,\"runs\":%d,\"median_us\":%.3f,"
        "\"min_us\":%.3f,\"max_us\":%.3f}\n",
        argv[1], ranks, runs, t.median, t.min, t.max);
  }
  Cblacs_exit(1);
  MPI_Finalize();
  return ok ? 0 : 1;
}
