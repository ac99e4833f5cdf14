#pragma once
// The order in which an interleaved measurement runs its contestants in each
// repetition: a Williams design. What ran just before a contestant changes its
// time: with the exchange schedulers rotated (repetition k starting with
// scheduler k mod n), "auto" always ran right after drsn, whose processes make
// their plans in every repetition, and ac right after auto; with auto running
// ac's very schedule, its 256 B and 2 KiB exchanges of 8 processes took
// 1.06-1.10 times ac's, and 0.92-0.97 times once auto came right after ac.
// Over `count` repetitions (2 x count when count is odd) every contestant runs
// at every position equally often and right after every other one equally
// often. Written out here only: the exchanges and the collectives both take it
// from here.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace switchyard {

// Repetition `rep`'s order of contestants 0 .. count - 1: the design's first
// row 0, 1, count - 1, 2, count - 2, ... (its steps 1, -2, 3, -4, ... are
// distinct mod count) shifted by rep mod count, and for an odd count reversed
// in every other cycle of count repetitions.
inline std::vector<std::size_t> balanced_order(std::size_t count, std::uint64_t rep) {
  std::vector<std::size_t> order(count);
  if (count == 0) return order;
  const std::size_t shift = static_cast<std::size_t>(rep % count);
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t first_row = j % 2 ? (j + 1) / 2 : (count - j / 2) % count;
    order[j] = (first_row + shift) % count;
  }
  if (count % 2 && (rep / count) % 2) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace switchyard
