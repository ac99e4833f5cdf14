#pragma once
// MPI's return codes as switchyard errors, and byte counts as MPI's int
// counts: for the files that call MPI (switchyard::transport_mpi only).

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::detail {

// Throws Error naming `what` unless rc is MPI_SUCCESS.
inline void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(std::string("switchyard: ") + what + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

// `bytes` as an MPI count; InvalidArgument naming `what` beyond INT_MAX.
inline int to_int_count(std::uint64_t bytes, const char* what) {
  if (bytes > static_cast<std::uint64_t>(INT_MAX)) {
    throw InvalidArgument(std::string("switchyard: ") + what + " of " + std::to_string(bytes) +
                          " bytes between nodes: at most 2147483647 bytes per message cross nodes");
  }
  return static_cast<int>(bytes);
}

}  // namespace switchyard::detail
