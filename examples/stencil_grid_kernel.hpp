#pragma once
// The 2-D 5-point Jacobi sweep of one block of an n x n grid on a GridHalo
// (examples/stencil.cpp, bench/bench_grid_halo.cpp): the grid's outer rows
// and columns are fixed (the boundary), every inner point becomes the mean
// of its four neighbours in each sweep, computed as
// 0.25 * ((up + down) + (left + right)) everywhere (bench/stencil_kernel.hpp
// does the same), so that any decomposition gives the same bits.

#include <switchyard/halo/grid_halo.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "sweep_arrays.hpp"

namespace stencil_grid {

// A process's block and one ghost layer on every side, twice (sweep_arrays.hpp): the current
// sweep's input and its output, row-major, (size[0] + 2) x (size[1] + 2).
class JacobiBlock {
 public:
  // initial(i, j): the value of global point (i, j) before the first sweep.
  template <class Initial>
  JacobiBlock(const switchyard::halo::GridBlock& b, int n, Initial initial)
      : first_i_(static_cast<int>(b.first[0])),
        first_j_(static_cast<int>(b.first[1])),
        rows_(static_cast<int>(b.size[0])),
        columns_(static_cast<int>(b.size[1])),
        n_(n),
        width_(static_cast<std::size_t>(columns_) + 2),
        arrays_(width_ * (static_cast<std::size_t>(rows_) + 2), width_) {
    const std::span<double> cur = arrays_.current();
    for (int r = 1; r <= rows_; ++r) {
      for (int c = 1; c <= columns_; ++c) cur[r * width_ + c] = initial(first_i_ + r - 1, first_j_ + c - 1);
    }
    arrays_.copy_current_to_next();
  }
  // The array the halo exchanges: the current values, ghosts included.
  std::span<double> current() noexcept { return arrays_.current(); }
  // One sweep of the block's points that are inner points of the grid, from
  // the current values (ghosts included) into the next; then the next are current.
  void sweep() noexcept {
    sweep_box(1, rows_, 1, columns_);
    arrays_.swap();
  }
  // The split phase's two halves (GridHalo::start_forward, wait_forward):
  // first the points that read no ghost (the block less its outer ring),
  // which read only current() and write only the next values; then, once
  // the ghosts are in, the outer ring, and the next are current. Together
  // the same points and bits as sweep().
  void sweep_interior() noexcept { sweep_box(2, rows_ - 1, 2, columns_ - 1); }
  void sweep_boundary() noexcept {
    sweep_box(1, 1, 1, columns_);
    if (rows_ > 1) sweep_box(rows_, rows_, 1, columns_);
    sweep_side_columns();
    arrays_.swap();
  }
  // How many of the block's points differ from `grid` (n x n, row-major) in any bit.
  std::uint64_t wrong_points(const std::vector<double>& grid) const noexcept {
    std::uint64_t wrong = 0;
    for (int r = 1; r <= rows_; ++r) {
      const double* mine = arrays_.current().data() + r * width_ + 1;
      const double* theirs = grid.data() + static_cast<std::size_t>(first_i_ + r - 1) * n_ + first_j_;
      for (int c = 0; c < columns_; ++c) wrong += std::memcmp(mine + c, theirs + c, sizeof(double)) != 0;
    }
    return wrong;
  }
  // The block's points, row-major (a whole grid's, for a block of all of it).
  std::vector<double> interior() const {
    std::vector<double> v;
    for (int r = 1; r <= rows_; ++r) {
      const std::span<const double> row = arrays_.current().subspan(r * width_ + 1, columns_);
      v.insert(v.end(), row.begin(), row.end());
    }
    return v;
  }

 private:
  // The points of local rows [r0, r1] and columns [c0, c1] that are inner
  // points of the grid, each as 0.25 * ((up + down) + (left + right)).
  void sweep_box(int r0, int r1, int c0, int c1) noexcept {
    const int first_c = std::max(c0, first_j_ == 0 ? 2 : 1);
    const int last_c = std::min(c1, first_j_ + columns_ == n_ ? columns_ - 1 : columns_);
    for (int r = r0; r <= r1; ++r) {
      const int i = first_i_ + r - 1;
      if (i == 0 || i == n_ - 1) continue;
      const double* up = arrays_.current().data() + (r - 1) * width_;
      const double* mid = up + width_;
      const double* down = mid + width_;
      double* out = arrays_.next().data() + r * width_;
      for (int c = first_c; c <= last_c; ++c) out[c] = 0.25 * ((up[c] + down[c]) + (mid[c - 1] + mid[c + 1]));
    }
  }

  // The outer ring's first and last columns between its first and last rows
  // (rows 2 to rows_ - 1, inner rows of the grid all), where they are inner
  // columns of the grid: both in one pass over the rows, a point each, the
  // same expression as sweep_box's. sweep_box would set up its row loop,
  // made for a run of points, for every single point.
  void sweep_side_columns() noexcept {
    const int last = first_j_ + columns_ - 1;  // the global columns of local columns 1 and columns_
    const bool left = first_j_ > 0 && first_j_ < n_ - 1;
    const bool right = columns_ > 1 && last < n_ - 1;  // last > 0 where columns_ > 1
    if (!left && !right) return;
    const std::size_t c = static_cast<std::size_t>(columns_);
    for (int r = 2; r < rows_; ++r) {
      const double* mid = arrays_.current().data() + r * width_;
      const double* up = mid - width_;
      const double* down = mid + width_;
      double* out = arrays_.next().data() + r * width_;
      if (left) out[1] = 0.25 * ((up[1] + down[1]) + (mid[0] + mid[2]));
      if (right) out[c] = 0.25 * ((up[c] + down[c]) + (mid[c - 1] + mid[c + 1]));
    }
  }

  int first_i_, first_j_, rows_, columns_, n_;
  std::size_t width_;
  stencil_layout::SweepArrays arrays_;
};

// The whole grid after `iterations` sweeps on one thread: the reference.
template <class Initial>
std::vector<double> sequential(int n, int iterations, Initial initial) {
  switchyard::halo::GridBlock all;
  all.size = {static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(n), 0};
  JacobiBlock grid(all, n, initial);
  for (int k = 0; k < iterations; ++k) grid.sweep();
  return grid.interior();
}

}  // namespace stencil_grid
