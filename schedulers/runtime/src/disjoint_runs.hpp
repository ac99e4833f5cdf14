#pragma once
// Whether the blocks of a process's receive description (exchange_hooks.hpp)
// are disjoint, found run against run rather than block by block, where the
// runs allow it: a redistribution's receiver describes a few runs of
// thousands of blocks each, and its plan's first job checked every block
// (docs/benchmarks.md, "A plan's first run in a job").

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

#include "switchyard/schedulers/exchange_hooks.hpp"

namespace switchyard::schedulers::detail {

// Whether any block of run a meets any block of run b, where each run's
// blocks are apart from one another and, if both runs have several blocks,
// the strides are one, S. Blocks i of a and j of b meet exactly where
// -a.length < (a.offset - b.offset) + (i - j) S < b.length: a range of
// i - j, which meets the differences the counts allow or not.
inline bool runs_meet(const StridedRun& a, const StridedRun& b) noexcept {
  __extension__ typedef __int128 Wide;  // offsets apart by up to 2^64, either way
  const Wide stride = a.count > 1 ? a.stride : b.count > 1 ? b.stride : 1;
  const Wide gap = static_cast<Wide>(a.offset) - static_cast<Wide>(b.offset);
  // The least d with gap + d S > -a.length, and the greatest with gap + d S < b.length.
  const auto floor_div = [](Wide x, Wide y) { return x / y - (x % y != 0 && x < 0); };
  const Wide least = floor_div(-static_cast<Wide>(a.length) - gap, stride) + 1;
  const Wide greatest = -floor_div(gap - static_cast<Wide>(b.length), stride) - 1;
  return std::max(least, -(static_cast<Wide>(b.count) - 1)) <= std::min(greatest, static_cast<Wide>(a.count) - 1);
}

// Whether the blocks are disjoint, found run against run where every run's
// blocks are apart and those of several blocks share one stride (a
// redistribution's receiver: a few runs of thousands of blocks each); nullopt
// where that does not hold, or where the pairs of runs outnumber the blocks
// (a pair costs about as much as a few blocks of the merge by offset that
// check_receives_disjoint falls back on).
inline std::optional<bool> runs_disjoint(std::span<const StridedRun> runs) {
  constexpr std::uint64_t kBlocksPerPair = 8;
  constexpr std::uint64_t kEnough = std::uint64_t{1} << 62;  // blocks: counted up to here
  std::uint64_t stride = 0, blocks = 0;
  for (const StridedRun& r : runs) {
    blocks = r.count >= kEnough - blocks ? kEnough : blocks + r.count;
    if (r.count < 2) continue;
    if (r.length > r.stride || (stride != 0 && r.stride != stride)) return std::nullopt;
    stride = r.stride;
  }
  const std::uint64_t pairs = runs.size() * (runs.size() - (runs.empty() ? 0 : 1)) / 2;
  if (pairs > blocks / kBlocksPerPair) return std::nullopt;
  for (std::size_t a = 0; a < runs.size(); ++a) {
    for (std::size_t b = a + 1; b < runs.size(); ++b) {
      if (runs_meet(runs[a], runs[b])) return false;
    }
  }
  return true;
}

}  // namespace switchyard::schedulers::detail
