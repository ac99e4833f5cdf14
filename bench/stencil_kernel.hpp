#pragma once
// The 2-D 5-point Jacobi stencil of bench_stencil and of its plain-MPI twin
// stencil_mpi: one definition of the grid, its initial values, a block of
// rows and the sweep, so that both programs (and the sequential reference
// they are checked against, bit for bit) compute exactly the same numbers.
//
// The grid is kN x kN doubles; its outer rows and columns are fixed (the
// boundary), every inner point becomes the mean of its four neighbours in each
// sweep. A process owns a block of consecutive rows and keeps one ghost row
// above and one below it: the neighbours' edge rows, exchanged before every
// sweep (the halo, kN doubles = 4 KiB each way).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "sweep_arrays.hpp"

namespace stencil {

inline constexpr int kN = 512;

// The initial value of point (i, j): a deterministic field with a hot top edge.
inline double initial(int i, int j) {
  if (i == 0) return 1.0;
  return static_cast<double>((i * 131 + j * 71) % 1000) / 1000.0;
}

// Rows [first, first + rows) of the grid for process `rank` of `processes`: a block of rows each.
inline std::pair<int, int> rows_of(int rank, int processes) {
  const int base = kN / processes, extra = kN % processes;
  const int first = rank * base + std::min(rank, extra);
  return {first, base + (rank < extra ? 1 : 0)};
}

// A process's block: its rows plus a ghost row above (local row 0) and below
// (local row rows + 1), in two arrays (sweep_arrays.hpp), the current sweep's input and output.
class Block {
 public:
  Block(int first, int rows) : first_(first), rows_(rows), arrays_((rows + 2) * std::size_t{kN}, kN) {
    const std::span<double> cur = arrays_.current();
    for (int r = 0; r < rows_ + 2; ++r) {
      const int i = first_ + r - 1;
      if (i < 0 || i >= kN) continue;
      for (int j = 0; j < kN; ++j) cur[r * std::size_t{kN} + j] = initial(i, j);
    }
    arrays_.copy_current_to_next();
  }
  int first() const noexcept { return first_; }
  int rows() const noexcept { return rows_; }
  // The current values of local row r (0: the ghost above, rows() + 1: the ghost below).
  std::span<double> row(int r) noexcept { return arrays_.current().subspan(r * std::size_t{kN}, kN); }
  std::span<const std::byte> row_bytes(int r) noexcept { return std::as_bytes(row(r)); }
  std::span<std::byte> ghost_bytes(int r) noexcept { return std::as_writable_bytes(row(r)); }
  // One Jacobi sweep of the block's inner points, from the current values
  // (ghost rows included) into the next; then the next are current.
  void sweep() noexcept {
    for (int r = 1; r <= rows_; ++r) {
      const int i = first_ + r - 1;
      if (i == 0 || i == kN - 1) continue;
      const double* up = arrays_.current().data() + (r - 1) * std::size_t{kN};
      const double* mid = up + kN;
      const double* down = mid + kN;
      double* out = arrays_.next().data() + r * std::size_t{kN};
      for (int j = 1; j < kN - 1; ++j) out[j] = 0.25 * ((up[j] + down[j]) + (mid[j - 1] + mid[j + 1]));
    }
    arrays_.swap();
  }
  // Whether the block's own rows are bit for bit those of the whole grid `grid` (kN x kN).
  bool matches(const std::vector<double>& grid) const noexcept {
    return std::memcmp(arrays_.current().data() + kN, grid.data() + first_ * std::size_t{kN},
                       rows_ * std::size_t{kN} * sizeof(double)) == 0;
  }

 private:
  int first_, rows_;
  stencil_layout::SweepArrays arrays_;
};

// The whole grid after `iterations` sweeps on one thread: the reference.
inline std::vector<double> sequential(int iterations) {
  Block all(0, kN);
  for (int k = 0; k < iterations; ++k) all.sweep();
  return {all.row(1).data(), all.row(1).data() + std::size_t{kN} * kN};
}

}  // namespace stencil
