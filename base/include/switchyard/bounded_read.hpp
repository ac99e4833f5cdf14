#pragma once
/// @file
/// Reading a whole input file whose size is bounded: a device without end
/// (/dev/zero, a FIFO fed forever) or a file far larger than any of its kind is
/// refused after at most the bound, never read whole into memory.

#include <cstddef>
#include <istream>
#include <string>

namespace switchyard {

/// Appends `in` to its end to `text`, in pieces; false, with at most
/// `max_bytes` + 64 KiB read, if it holds more than `max_bytes`. A read error
/// leaves in.bad() set for the caller to report.
inline bool read_at_most(std::istream& in, std::size_t max_bytes, std::string& text) {
  char piece[1 << 16];
  while (in.read(piece, sizeof piece) || in.gcount() > 0) {
    if (text.size() + static_cast<std::size_t>(in.gcount()) > max_bytes) return false;
    text.append(piece, static_cast<std::size_t>(in.gcount()));
  }
  return true;
}

}  // namespace switchyard
