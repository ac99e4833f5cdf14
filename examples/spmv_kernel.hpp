#pragma once
// The product both spmv programs repeat (examples/spmv.cpp on switchyard,
// bench/spmv_mpi.cpp on plain MPI): x's start, the scale that keeps x's size
// over the iterations, the kernel, and the iterations done sequentially, the
// reference both check against bit for bit.

#include <switchyard/halo/csr_matrix.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace spmv {

namespace syh = switchyard::halo;

inline double x0(std::uint64_t g) { return 1.0 + 1.0 / (2.0 + static_cast<double>(g)); }

// Row i of A x, its entries summed in their stored order (the order every
// product here keeps, so that all of them agree bit for bit). Unrolled four
// times, the order unchanged: the loop of one entry a step ran several times
// slower at some places in a line of code than at others, so that the
// product's speed, which both twins share, followed where the linker put it
// (docs/benchmarks.md, "The sparse product's x kept its size; its loop
// unrolled").
inline double row_times(const syh::CsrMatrix<double>& a, std::uint64_t i, const double* x) {
  double sum = 0;
#pragma GCC unroll 4
  for (std::uint64_t k = a.row_start[i]; k < a.row_start[i + 1]; ++k) sum += a.value[k] * x[a.column[k]];
  return sum;
}

// y = scale * A x over a's rows: an ordinary function, so that its loop
// variables live in registers (docs/embedding.md, "Compute inside a process").
[[gnu::noinline]] inline void multiply(const syh::CsrMatrix<double>& a, const double* x, double scale, double* y) {
  for (std::uint64_t i = 0; i < a.rows; ++i) y[i] = row_times(a, i, x) * scale;
}

// The scale that keeps x the size it started over k products: 1 / the
// geometric mean of ||A x|| / ||x|| over k products from x0, x renormalised
// after each (on one thread, before anything is timed). Scaled by 1 / ||A||
// instead, x shrank by the ratio of A's spectral radius to its norm every
// product: lund_a's entries fell to subnormal numbers within a few thousand
// products and stayed there, so that the programs timed arithmetic on
// subnormals and zeros (slower on this EPYC) and computed nothing.
inline double steady_scale(const syh::CsrMatrix<double>& a, std::uint32_t k) {
  std::vector<double> x(a.rows), y(a.rows);
  for (std::uint64_t g = 0; g < a.rows; ++g) x[g] = x0(g);
  const auto norm = [](const std::vector<double>& v) {
    long double squares = 0;
    for (const double e : v) squares += static_cast<long double>(e) * e;
    return std::sqrt(squares);
  };
  long double size = norm(x), log_growth = 0;
  for (std::uint32_t it = 0; it < k; ++it) {
    multiply(a, x.data(), 1.0, y.data());
    const long double grown = norm(y);
    if (!(grown > 0) || !std::isfinite(grown)) return 1.0;  // A x is 0 or overflows: no scale keeps x its size
    log_growth += std::log(grown / size);
    for (double& e : y) e = static_cast<double>(e / grown);
    size = norm(y);
    x.swap(y);
  }
  return k > 0 ? static_cast<double>(std::exp(-log_growth / k)) : 1.0;
}

// Whether `blocks` is more than the matrix's rows, said on stderr as
// `program`'s bad input: refused before a block, and its memory, for each.
inline bool blocks_beyond_rows(const char* program, std::uint64_t blocks, const char* matrix,
                               const syh::CsrMatrix<double>& a) {
  if (blocks <= a.rows) return false;
  std::fprintf(stderr, "%s: --blocks %llu is more than %s's %llu rows\n", program,
               static_cast<unsigned long long>(blocks), matrix, static_cast<unsigned long long>(a.rows));
  return true;
}

// x's entries that are subnormal or not finite: arithmetic on them is slow
// and means nothing, so both programs print their count beside their time.
inline std::size_t abnormal_entries(const std::vector<double>& x) {
  return static_cast<std::size_t>(
      std::count_if(x.begin(), x.end(), [](double e) { return e != 0 && !std::isnormal(e); }));
}

// A block's rows (local numbering: its owned columns first, ghosts from
// `owned` on) split by what they read: `interior` rows read owned entries
// alone, so they are computed while the halo moves; `boundary` rows read a
// ghost and wait for it. Each row keeps its sum's order, so the product stays
// the same bit for bit.
struct RowSplit {
  std::vector<std::uint64_t> interior, boundary;
};

inline RowSplit split_rows(const syh::CsrMatrix<double>& a, std::uint64_t owned) {
  RowSplit split;
  for (std::uint64_t i = 0; i < a.rows; ++i) {
    const auto columns = a.row_columns(i);
    const bool reads_ghost = std::any_of(columns.begin(), columns.end(), [&](std::uint64_t c) { return c >= owned; });
    (reads_ghost ? split.boundary : split.interior).push_back(i);
  }
  return split;
}

// multiply() over the listed rows alone.
[[gnu::noinline]] inline void multiply_rows(const syh::CsrMatrix<double>& a, const std::vector<std::uint64_t>& rows,
                                            const double* x, double scale, double* y) {
  for (const std::uint64_t i : rows) y[i] = row_times(a, i, x) * scale;
}

// x <- scale * A x, k times from x0, on one thread; the microseconds each
// iteration took in us_per_iteration: the product's compute alone, which
// both programs print beside their own time.
inline std::vector<double> sequential(const syh::CsrMatrix<double>& a, double scale, std::uint32_t k,
                                      double& us_per_iteration) {
  std::vector<double> x(a.rows), y(a.rows);
  for (std::uint64_t g = 0; g < a.rows; ++g) x[g] = x0(g);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint32_t it = 0; it < k; ++it) {
    multiply(a, x.data(), scale, y.data());
    x.swap(y);
  }
  us_per_iteration = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                     std::max<std::uint32_t>(k, 1);
  return x;
}

}  // namespace spmv
