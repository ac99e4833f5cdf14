#pragma once
// The machine's memory, for the checks that refuse up front what would not fit:
// switchyard refuses a request estimated at more than half of it, before any
// of that memory is touched (an InvalidArgument in the API, exit 2 on the
// command line), rather than growing into swap or std::bad_alloc.

#include <unistd.h>

#include <cstdint>

namespace switchyard {

// Physical memory in bytes; 0 if the system does not say.
inline std::uint64_t physical_memory() noexcept {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

// Whether `bytes` is more than switchyard takes of this machine: half its memory.
inline bool beyond_memory_bound(double bytes) noexcept {
  const std::uint64_t memory = physical_memory();
  return memory > 0 && bytes > static_cast<double>(memory) / 2;
}

}  // namespace switchyard
