#pragma once
/// @file
/// The machine as hwloc sees it: which cores this process may run on, and the
/// binding of threads to them. Core numbers are the operating system's CPU
/// numbers (the ones taskset and /proc/cpuinfo use).

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace switchyard {

/// One CPU (hardware thread) this process may run on, and where it sits; -1 where hwloc does not say.
struct CoreInfo {
  int os_index = -1;  ///< OS CPU number
  int core = -1;  ///< physical core (hwloc logical index)
  int package = -1;  ///< socket
  int numa_node = -1;  ///< NUMA node (hwloc logical index)
};

/// The machine as hwloc sees it: the CPUs this process may use, and thread binding.
class Topology {
 public:
  Topology();  ///< discovers the machine; throws Error if hwloc fails
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  /// Every CPU this process is allowed to run on, in OS order.
  const std::vector<CoreInfo>& allowed_cores() const noexcept { return allowed_; }
  /// The allowed CPU with OS number `os_index`, or nullptr if it is not one.
  const CoreInfo* find(int os_index) const noexcept;

  /// Binds the calling thread to one CPU. Returns false if the OS refused.
  bool bind_this_thread(int os_index) const;
  /// The CPUs a thread is bound to, as a list like "0-1,4", read back from the OS.
  std::string thread_binding(std::thread::native_handle_type thread) const;
  /// The CPU the calling thread last ran on, or -1.
  int this_thread_last_cpu() const;

  /// The size of a core's private cache: its L2, the last level private to one
  /// core on current x86 and ARM servers (a virtual machine may show each core
  /// an L3 of its own, which it shares in fact), or 0 if hwloc reports none.
  std::uint64_t private_cache_bytes() const;

  /// A human-readable summary of packages, NUMA nodes, cores, PUs and caches.
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<CoreInfo> allowed_;
};

}  // namespace switchyard
