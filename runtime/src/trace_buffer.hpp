#pragma once
// One core's share of a trace: a fixed array of events, filled by that core's
// worker thread alone while a job runs (no lock, no allocation, no atomic),
// read by the thread that writes the trace once the job is over. When it is
// full, later events are counted as dropped, never stored: the trace keeps
// the beginning of what happened on that core.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "switchyard/message.hpp"

namespace switchyard {
enum class TraceCategory : std::uint8_t;
}

namespace switchyard::detail {

// A span on one process's track. Strings are never copied: `name`, `label`
// and `note` point at string literals (or strings that outlive the trace).
struct TraceEvent {
  std::uint64_t begin = 0;  // TraceBuffer::now() ticks
  std::uint64_t end = 0;  // 0 while the span is open
  const char* name = nullptr;
  const char* label = nullptr;  // names `value`; no numeric argument when nullptr
  const char* note = nullptr;  // a text argument ("what"), when not nullptr
  std::uint64_t value = 0;
  std::uint64_t bytes = 0;
  Rank rank = 0;  // whose track
  Rank src = kAnySource;
  Rank dst = kAnySource;
  ContextId context = 0;
  std::uint32_t job = 0;  // the log's job number: messages pair up within a job
  TraceCategory category{};
  bool has_bytes = false;
};

class TraceBuffer {
 public:
  TraceBuffer(int os_core, std::size_t capacity)
      : events_(std::make_unique<TraceEvent[]>(capacity)), capacity_(capacity), os_core_(os_core) {}

  // The trace's clock. On x86-64 the time-stamp counter (constant and
  // synchronized across cores where the CPU says constant_tsc and nonstop_tsc):
  // less than half of steady_clock's cost a read on a KVM guest, whose
  // kvm-clock goes through the vDSO. TraceLog converts ticks to
  // steady_clock nanoseconds against two readings of both clocks.
  static std::uint64_t now() noexcept {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return steady_ns();
#endif
  }
  static std::uint64_t steady_ns() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }
  // The next event's slot, or nullptr (counted as dropped) when the buffer is full.
  TraceEvent* reserve() noexcept {
    if (used_ == capacity_) [[unlikely]] {
      ++dropped_;
      return nullptr;
    }
    TraceEvent* e = &events_[used_++];
    e->job = job_;
    return e;
  }
  void start_job(std::uint32_t job) noexcept { job_ = job; }
  // Spans still open (a process blocked when its job failed) end at `at`.
  void close_open(std::size_t from, std::uint64_t at) noexcept {
    for (std::size_t i = from; i < used_; ++i) {
      if (events_[i].end == 0) events_[i].end = at;
    }
  }

  int os_core() const noexcept { return os_core_; }
  std::size_t used() const noexcept { return used_; }
  std::uint64_t dropped() const noexcept { return dropped_; }
  std::span<const TraceEvent> events() const noexcept { return {events_.get(), used_}; }

 private:
  std::unique_ptr<TraceEvent[]> events_;  // value-initialized up front: no page is first touched during a job
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint32_t job_ = 0;
  int os_core_;
};

}  // namespace switchyard::detail
