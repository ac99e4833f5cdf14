#include "switchyard/contention/hardware_counters.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "switchyard/errors.hpp"

namespace switchyard::contention {

namespace {

// /proc/cpuinfo's first vendor_id and cpu family ("", 0 where it has none).
std::pair<std::string, unsigned> this_cpu() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor;
  unsigned family = 0;
  bool have_family = false;
  while (std::getline(in, line) && (vendor.empty() || !have_family)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    std::istringstream value(line.substr(colon + 1));
    if (key == "vendor_id" && vendor.empty()) value >> vendor;
    if (line.starts_with("cpu family") && !have_family) have_family = static_cast<bool>(value >> family);
  }
  return {vendor, family};
}

}  // namespace

std::vector<CounterEvent> cache_to_cache_event(const std::string& vendor, unsigned family) {
  if (vendor == "GenuineIntel" && family == 6) {
    return {{"cache-to-cache", PERF_TYPE_RAW, 0x04d2,
             "MEM_LOAD_L3_HIT_RETIRED.XSNP_HITM (XSNP_FWD from Ice Lake on), event 0xD2 umask 0x04"}};
  }
  if (vendor == "AuthenticAMD" && (family == 0x19 || family == 0x1a)) {
    return {{"cache-to-cache", PERF_TYPE_RAW, 0x1443,
             "ls_dmnd_fills_from_sys, another CCX's or node's cache, event 0x43 umask 0x14"}};
  }
  return {};
}

std::vector<CounterEvent> hardware_events() {
  std::vector<CounterEvent> events{
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "PERF_COUNT_HW_CPU_CYCLES"},
      {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "PERF_COUNT_HW_CACHE_MISSES (last level)"}};
  const auto [vendor, family] = this_cpu();
  for (CounterEvent& e : cache_to_cache_event(vendor, family)) events.push_back(std::move(e));
  return events;
}

std::vector<CounterEvent> software_events() {
  return {{"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "PERF_COUNT_SW_TASK_CLOCK (ns)"},
          {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "PERF_COUNT_SW_PAGE_FAULTS"}};
}

int open_event(const CounterEvent& event, int group_fd) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = event.type;
  attr.config = event.config;
  attr.read_format = PERF_FORMAT_GROUP;
  // The copies are user-space work; the kernel's part (sleeps, wake-ups) is
  // left out, which also lets it open under perf_event_paranoid 2.
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd =
      ::syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any CPU */, group_fd, PERF_FLAG_FD_CLOEXEC);
  return fd >= 0 ? static_cast<int>(fd) : -errno;
}

CounterGroup::CounterGroup(std::span<const CounterEvent> events, const EventOpener& open) {
  if (events.size() > kMaxEvents) {
    throw InvalidArgument("switchyard: a counter group holds at most " + std::to_string(kMaxEvents) + " events, not " +
                          std::to_string(events.size()));
  }
  int hardware_leader = -1;
  for (const CounterEvent& e : events) {
    const bool software = e.type == PERF_TYPE_SOFTWARE;
    const int fd = open(e, software ? -1 : hardware_leader);
    if (fd < 0) {
      absent_.push_back(e.name + ": " + std::strerror(-fd));
      continue;
    }
    const bool leads = software || hardware_leader < 0;
    if (!software && hardware_leader < 0) hardware_leader = fd;
    fds_.push_back(fd);
    leads_.push_back(leads ? 1 : 0);
    counting_.push_back(e);
  }
}

CounterGroup::~CounterGroup() {
  // Members before their leader.
  for (auto fd = fds_.rbegin(); fd != fds_.rend(); ++fd) ::close(*fd);
}

CounterGroup::CounterGroup(CounterGroup&& other) noexcept
    : fds_(std::exchange(other.fds_, {})),
      leads_(std::move(other.leads_)),
      counting_(std::move(other.counting_)),
      absent_(std::move(other.absent_)) {}

CounterGroup& CounterGroup::operator=(CounterGroup&& other) noexcept {
  if (this != &other) {
    CounterGroup gone(std::move(*this));
    fds_ = std::exchange(other.fds_, {});
    leads_ = std::move(other.leads_);
    counting_ = std::move(other.counting_);
    absent_ = std::move(other.absent_);
  }
  return *this;
}

bool CounterGroup::read(std::span<std::uint64_t> values) const noexcept {
  if (fds_.empty() || values.size() < fds_.size()) return false;
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    if (leads_[i] && !read_group(i, values)) return false;
  }
  return true;
}

// The leader's group: the leader and the hardware events after it, or a
// software event alone.
bool CounterGroup::read_group(std::size_t leader, std::span<std::uint64_t> values) const noexcept {
  const bool software = counting_[leader].type == PERF_TYPE_SOFTWARE;
  std::size_t members = 1;
  for (std::size_t i = leader + 1; !software && i < fds_.size(); ++i) members += leads_[i] ? 0 : 1;
  // PERF_FORMAT_GROUP: the number of events, then each one's count, in the order they joined.
  std::array<std::uint64_t, 1 + kMaxEvents> buffer{};
  const ssize_t got = ::read(fds_[leader], buffer.data(), sizeof(std::uint64_t) * (1 + members));
  if (got != static_cast<ssize_t>(sizeof(std::uint64_t) * (1 + members)) || buffer[0] != members) return false;
  values[leader] = buffer[1];
  std::size_t next = 2;
  for (std::size_t i = leader + 1; !software && i < fds_.size(); ++i) {
    if (!leads_[i]) values[i] = buffer[next++];
  }
  return true;
}

std::string describe(const CounterGroup& group) {
  std::string line = "hardware counters: ";
  if (!group.available()) {
    line += "none here (no PMU this process may use: ";
    for (std::size_t i = 0; i < group.absent().size(); ++i) line += (i ? ", " : "") + group.absent()[i];
    return line + "); measuring without them";
  }
  for (std::size_t i = 0; i < group.counting().size(); ++i) {
    line += (i ? ", " : "") + group.counting()[i].name + " (" + group.counting()[i].source + ")";
  }
  if (!group.absent().empty()) {
    line += "; not here: ";
    for (std::size_t i = 0; i < group.absent().size(); ++i) line += (i ? ", " : "") + group.absent()[i];
  }
  return line;
}

}  // namespace switchyard::contention
