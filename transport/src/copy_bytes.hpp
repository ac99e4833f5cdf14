#pragma once
// Copies of a few bytes: a message's payload on the message path, a compiled
// exchange's piece (a halo's double, a redistribution's run of two). A call
// of memcpy with a variable size costs more than such a copy itself (about 25
// instructions and a call, against two moves).

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace switchyard::detail {

// n bytes from `from` to `to` (not overlapping): up to 32 bytes as two
// fixed-size moves, overlapping unless n is a power of two, which the
// compiler inlines; larger ones through memcpy.
inline void copy_bytes(std::byte* to, const std::byte* from, std::uint64_t n) noexcept {
  if (n > 32) {
    std::memcpy(to, from, n);
  } else if (n >= 16) {
    std::memcpy(to, from, 16);
    std::memcpy(to + n - 16, from + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, from + n - 4, 4);
  } else {
    for (std::uint64_t i = 0; i < n; ++i) to[i] = from[i];
  }
}

}  // namespace switchyard::detail
