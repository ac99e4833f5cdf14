#pragma once
// Hardware counters of the calling thread, through Linux's perf_event_open:
// a group of events (cycles, cache misses, cache-to-cache transfers where the
// CPU's vendor names an event for them) that counts the thread's user-space
// work and is read in one read() system call.
//
// Where there is no PMU (a virtual machine whose host exposes none: no `cpu`
// event source under /sys/bus/event_source/devices) the hardware events do
// not open, and a CounterGroup says so (available() is false, absent() says
// why for each event); the measurement carries on without them. Software
// events (task-clock, page faults) open on any Linux kernel that allows
// perf_event_open at all, so the tests drive the counting path with them
// where the hardware has none.
//
// A worker thread runs many processes, so the counts of one thread are those
// of its core: whatever the processes of that core did between two reads.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace switchyard::contention {

/// One event: perf_event_attr's type and config, and a name to print.
struct CounterEvent {
  std::string name;  ///< as reports print it, e.g. "cycles"
  std::uint32_t type = 0;  ///< PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_RAW
  std::uint64_t config = 0;  ///< the event within its type
  std::string source;  ///< where the encoding comes from, for the reader of a report
};

/// The events a contention run counts on this machine: cycles and cache misses
/// (the kernel's generic hardware events), and cache-to-cache transfers where
/// this CPU's vendor names an event for them (cache_to_cache_event()).
std::vector<CounterEvent> hardware_events();
/// The cache-to-cache transfer event of a CPU (/proc/cpuinfo's vendor_id and
/// cpu family), or none: Intel family 6, MEM_LOAD_L3_HIT_RETIRED.XSNP_HITM
/// (XSNP_FWD from Ice Lake on; loads served from another core's modified
/// line, event 0xD2 umask 0x04); AMD families 0x19 and 0x1A (Zen 3 to 5),
/// ls_dmnd_fills_from_sys from another CCX's cache or another node's (event
/// 0x43, umask 0x14; within a CCX the PMU counts other cores' L2s together
/// with the shared L3 and cannot tell them apart). From the vendors' event
/// lists; not yet checked on such a machine by this project.
std::vector<CounterEvent> cache_to_cache_event(const std::string& vendor, unsigned family);
/// task-clock and page faults: software events, for the tests.
std::vector<CounterEvent> software_events();

/// Opens `event` for the calling thread, user-space work only, in the group of
/// `group_fd` (-1: as its leader); returns the file descriptor, or -errno.
/// open_event is the kernel's perf_event_open; tests pass another to simulate
/// a machine without a PMU.
using EventOpener = std::function<int(const CounterEvent& event, int group_fd)>;
/// The kernel's perf_event_open for `event` (see EventOpener): a file descriptor, or -errno.
int open_event(const CounterEvent& event, int group_fd);

/// The perf_event counters of one thread. The hardware events are opened as
/// one group, so that a single read returns their counts over the same
/// window; each software event leads a group of its own (a kernel may count
/// nothing, with no error, in a software event whose leader is another
/// software PMU's: task-clock leading page-faults on this project's VM).
/// Events the kernel refuses (no PMU, a virtual machine, perf_event_paranoid)
/// are left out and named in absent().
class CounterGroup {
 public:
  static constexpr std::size_t kMaxEvents = 8;  ///< the most events one group holds

  /// Opens each event that the kernel accepts, the first hardware one accepted
  /// leading the others. At most kMaxEvents; more is a programming error (InvalidArgument).
  explicit CounterGroup(std::span<const CounterEvent> events, const EventOpener& open = open_event);
  ~CounterGroup();  ///< closes every event it opened
  CounterGroup(CounterGroup&&) noexcept;  ///< takes over the other group's events, leaving it with none
  CounterGroup& operator=(CounterGroup&&) noexcept;  ///< closes this group's events, then takes over the other's
  CounterGroup(const CounterGroup&) = delete;
  CounterGroup& operator=(const CounterGroup&) = delete;

  bool available() const noexcept { return !fds_.empty(); }  ///< whether at least one event opened
  /// The events that count, in the order read() returns them.
  const std::vector<CounterEvent>& counting() const noexcept { return counting_; }
  /// "cycles: No such file or directory", one per event that did not open.
  const std::vector<std::string>& absent() const noexcept { return absent_; }

  /// The counts so far of counting(), one read() per group: false if the
  /// group is not available or a read failed. Allocates nothing.
  bool read(std::span<std::uint64_t> values) const noexcept;

 private:
  /// Reads the group that fds_[leader] leads into the places of its members.
  bool read_group(std::size_t leader, std::span<std::uint64_t> values) const noexcept;

  std::vector<int> fds_;  ///< in counting() order
  std::vector<std::uint8_t> leads_;  ///< per fd: 1 where it leads a group (the hardware one, or a software event)
  std::vector<CounterEvent> counting_;
  std::vector<std::string> absent_;
};

/// One line for a report: the events that count, or that none do here and why.
std::string describe(const CounterGroup& group);

}  // namespace switchyard::contention
