#pragma once
/// @file
/// The memory a request may take here, for the checks that refuse up front what
/// would not fit: switchyard refuses a request estimated at more than half of
/// the smaller of the machine's physical memory and the process's address-space
/// limit (RLIMIT_AS, `ulimit -v`), before any of that memory is touched (an
/// InvalidArgument in the API, exit 2 on the command line), rather than growing
/// into swap or std::bad_alloc. Half, because an estimate counts what a request
/// keeps, not the libraries, thread stacks, allocator arenas and vectors that
/// double as they grow, which under an address-space limit all count too.

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace switchyard {

/// Physical memory in bytes; 0 if the system does not say. Asked once (a
/// system call, which every run() would otherwise make): it does not change
/// while the process runs.
inline std::uint64_t physical_memory() noexcept {
  static const std::uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  }();
  return bytes;
}

/// The tighter of the two limits, and which one it is; a request may take half of it.
struct MemoryLimit {
  double bytes = 0;  ///< the limit; 0: neither limit is known, and nothing is refused
  const char* what = "physical memory";  ///< which limit it is, for messages
  /// The bytes a request may take: half of the limit.
  double budget() const noexcept { return bytes / 2; }
  /// Whether a request of `needed` bytes is more than that (never where no limit is known).
  bool refuses(double needed) const noexcept { return bytes > 0 && needed > budget(); }
};

/// The smaller of physical memory and the address-space limit (RLIMIT_AS), as
/// this process has them now.
inline MemoryLimit memory_limit() noexcept {
  MemoryLimit limit{static_cast<double>(physical_memory())};
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const auto bytes = static_cast<double>(as.rlim_cur);
    if (limit.bytes == 0 || bytes < limit.bytes) limit = {bytes, "address-space limit, RLIMIT_AS or ulimit -v"};
  }
  return limit;
}

/// Whether `bytes` is more than a request may take here.
inline bool beyond_memory_bound(double bytes) noexcept { return memory_limit().refuses(bytes); }

/// "1.5 GiB": bytes in the largest binary unit that keeps a number of at least 1.
inline std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  char text[48];
  std::snprintf(text, sizeof text, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return text;
}

/// Why `needed` bytes cannot be had under `limit`, for an error message
/// ("needs about 9.3 GiB, the machine has 7.6 GiB (its address-space limit
/// ...), of which a request may take half"), or "" when they can. For a
/// caller with several checks: memory_limit() asks the system each time.
inline std::string memory_shortfall(double needed, const MemoryLimit& limit) {
  if (!limit.refuses(needed)) return "";
  return "needs about " + human_bytes(needed) + ", the machine has " + human_bytes(limit.bytes) + " (its " +
         limit.what + "), of which a request may take half";
}

/// The same under the limit as this process has it now.
inline std::string memory_shortfall(double needed) { return memory_shortfall(needed, memory_limit()); }

}  // namespace switchyard
