#pragma once
// The floor under an exchange, for `switchyard exchange --json` (floor_ms) and
// its plot: every byte of the matrix must be copied at least once, and at
// best the cores share the copying evenly. So: one core's share (the matrix's
// bytes over the cores) copied once with memcpy, source and destination
// touched first, on the calling thread; the median of five.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "switchyard/median.hpp"

namespace switchyard::cli {

inline double copy_floor_ms(std::uint64_t matrix_bytes, std::size_t cores) {
  const std::size_t share = static_cast<std::size_t>((matrix_bytes + cores - 1) / std::max<std::size_t>(cores, 1));
  if (share == 0) return 0;
  std::vector<std::byte> from(share, std::byte{1}), to(share);
  std::vector<double> ms;
  for (int k = 0; k < 5; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), share);
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    from[k % share] = to[(k + 1) % share];  // the next copy is not the same as this one
  }
  return median(std::move(ms));
}

}  // namespace switchyard::cli
