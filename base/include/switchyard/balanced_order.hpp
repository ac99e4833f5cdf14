#pragma once
/// @file
/// The order in which an interleaved measurement runs its contestants in each
/// repetition: a Williams design. What ran just before a contestant changes its
/// time: with the exchange schedulers rotated (repetition k starting with
/// scheduler k mod n), "auto" always ran right after drsn, whose processes make
/// their plans in every repetition, and ac right after auto; with auto running
/// ac's very schedule, its 256 B and 2 KiB exchanges of 8 processes took
/// 1.06-1.10 times ac's, and 0.92-0.97 times once auto came right after ac.
/// Over `count` repetitions (2 x count when count is odd) every contestant runs
/// at every position equally often and right after every other one equally
/// often. Written out here only: the exchanges and the collectives both take it
/// from here.

#include <cstddef>
#include <cstdint>

namespace switchyard {

/// The contestant (0 .. count - 1, count >= 1) that runs at `position` in
/// repetition `rep`: the design's first row 0, 1, count - 1, 2, count - 2, ...
/// (its steps 1, -2, 3, -4, ... are distinct mod count) shifted by rep mod
/// count, and for an odd count reversed in every other cycle of count
/// repetitions. Arithmetic only: it runs between the timed repetitions of
/// every process.
constexpr std::size_t balanced_order(std::size_t count, std::uint64_t rep, std::size_t position) noexcept {
  if (count % 2 && (rep / count) % 2) position = count - 1 - position;
  const std::size_t first_row = position % 2 ? (position + 1) / 2 : (count - position / 2) % count;
  return (first_row + static_cast<std::size_t>(rep % count)) % count;
}

}  // namespace switchyard
