#pragma once
// System calls made by every thread of this program, counted by the kernel:
// one perf counter of the raw_syscalls:sys_enter tracepoint per thread that
// exists when the counter is opened (threads made later are not counted).
// Where the kernel refuses (no tracefs, perf_event_paranoid, a container),
// open() says why and the test skips.

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace sytest {

class SyscallCounter {
 public:
  SyscallCounter(const SyscallCounter&) = delete;
  SyscallCounter& operator=(const SyscallCounter&) = delete;
  SyscallCounter(SyscallCounter&& o) noexcept : fds_(std::move(o.fds_)) { o.fds_.clear(); }
  ~SyscallCounter() {
    for (int fd : fds_) close(fd);
  }

  // Counters on every thread of this program, or nullopt with `why` set.
  static std::optional<SyscallCounter> open(std::string& why) {
    const std::optional<std::uint64_t> id = tracepoint_id();
    if (!id) {
      why = "no raw_syscalls/sys_enter tracepoint readable under /sys/kernel/tracing or /sys/kernel/debug/tracing";
      return std::nullopt;
    }
    SyscallCounter counter;
    DIR* tasks = opendir("/proc/self/task");
    if (!tasks) {
      why = "cannot list /proc/self/task";
      return std::nullopt;
    }
    while (const dirent* entry = readdir(tasks)) {
      if (entry->d_name[0] == '.') continue;
      perf_event_attr attr{};
      attr.type = PERF_TYPE_TRACEPOINT;
      attr.size = sizeof attr;
      attr.config = *id;
      const long fd = syscall(SYS_perf_event_open, &attr, std::atoi(entry->d_name), -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) {
        closedir(tasks);
        why = "perf_event_open refused a tracepoint counter (perf_event_paranoid or a container)";
        return std::nullopt;
      }
      counter.fds_.push_back(static_cast<int>(fd));
    }
    closedir(tasks);
    return counter;
  }

  // System calls of the counted threads so far (the reads themselves included).
  std::uint64_t read() const {
    std::uint64_t total = 0;
    for (int fd : fds_) {
      std::uint64_t value = 0;
      if (::read(fd, &value, sizeof value) == sizeof value) total += value;
    }
    return total;
  }
  std::size_t threads() const noexcept { return fds_.size(); }

 private:
  SyscallCounter() = default;
  static std::optional<std::uint64_t> tracepoint_id() {
    for (const char* path : {"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
                             "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id"}) {
      std::ifstream in(path);
      std::uint64_t id = 0;
      if (in >> id) return id;
    }
    return std::nullopt;
  }
  std::vector<int> fds_;
};

}  // namespace sytest
