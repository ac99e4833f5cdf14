#pragma once
// A stencil sweep's two arrays, its input and its output, in one allocation,
// placed so that the core never holds the sweep's loads back behind its stores.
//
// A core compares a load with the stores before it on the low 12 bits of their
// addresses first (4K aliasing). Two arrays allocated apart start at the same
// offset in their pages (the allocator's header), and a row of 512 doubles is
// 4 KiB: a sweep's store to out[j] then shares those bits with its loads of
// up[j], mid[j] and down[j] at every point, and the loads wait as if they
// depended on the store. Here the output starts where its offset in a page is
// farthest from those of the three rows the sweep reads (the input's offset,
// and that plus and minus a row's stride): half a page after the input for
// rows of 4 KiB, a quarter for rows of 2 KiB. A sweep of a block that stays in
// L2 runs 5-10 % faster. bench/stencil_kernel.hpp,
// examples/stencil_grid_kernel.hpp and bench_grid_halo's strips use it alike,
// so every form of the stencil, its MPI twin and its compute limit keep one
// layout.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace stencil_layout {

class SweepArrays {
 public:
  // Two arrays of `size` doubles, zeroed, whose rows are `row_stride` doubles apart.
  SweepArrays(std::size_t size, std::size_t row_stride)
      : storage_(2 * size + kPage), current_(storage_.data()), size_(size) {
    const std::size_t offset = reinterpret_cast<std::uintptr_t>(current_) / sizeof(double) % kPage;
    const std::size_t wanted = (offset + output_offset(row_stride)) % kPage;
    const std::size_t at = (offset + size) % kPage;  // the output's offset right after the input
    next_ = current_ + size + (wanted + kPage - at) % kPage;
  }
  SweepArrays(const SweepArrays&) = delete;
  SweepArrays& operator=(const SweepArrays&) = delete;

  std::span<double> current() noexcept { return {current_, size_}; }
  std::span<const double> current() const noexcept { return {current_, size_}; }
  std::span<double> next() noexcept { return {next_, size_}; }
  // After a sweep: the next values are current.
  void swap() noexcept { std::swap(current_, next_); }
  // Once the current values are set: the next ones start as them, so that
  // what no sweep writes (the grid's fixed boundary) is in both.
  void copy_current_to_next() noexcept { std::ranges::copy(current(), next_); }

  static constexpr std::size_t kPage = 4096 / sizeof(double);  // in doubles
  static constexpr std::size_t kLine = 64 / sizeof(double);

  // The output's offset in a page, in doubles, less the input's: the whole
  // cache line farthest from the offsets of the rows a sweep reads beside
  // its output's row (0 and plus or minus the stride).
  static constexpr std::size_t output_offset(std::size_t row_stride) noexcept {
    const std::size_t rows[] = {0, row_stride % kPage, (kPage - row_stride % kPage) % kPage};
    std::size_t best = 0, farthest = 0;
    for (std::size_t at = 0; at < kPage; at += kLine) {
      std::size_t nearest = kPage;
      for (const std::size_t r : rows) {
        const std::size_t d = at > r ? at - r : r - at;
        nearest = std::min(nearest, std::min(d, kPage - d));
      }
      if (nearest > farthest) {
        farthest = nearest;
        best = at;
      }
    }
    return best;
  }

 private:
  std::vector<double> storage_;
  double* current_;
  double* next_ = nullptr;
  std::size_t size_;
};

// Rows of 4 KiB (bench_stencil's 512 doubles, and 514 with a ghost column on
// each side): half a page apart. Rows of about 2 KiB (GridHalo's blocks of 256
// columns): a quarter, since half a page would put the output beside the row
// above.
static_assert(SweepArrays::output_offset(512) == SweepArrays::kPage / 2);
static_assert(SweepArrays::output_offset(514) == SweepArrays::kPage / 2);
static_assert(SweepArrays::output_offset(258) == SweepArrays::kPage / 4);

}  // namespace stencil_layout
