#pragma once
/// @file
/// Traces of jobs, in the Chrome trace-event JSON format that Perfetto
/// (ui.perfetto.dev) and chrome://tracing open.
///
/// @code
///   TraceLog log;                                    // a sink for one or more jobs
///   RunOptions o;
///   o.trace = &log;                                  // or o.trace_file = "job.json" for this job alone
///   rt.run(n, body, o);
///   log.write_file("trace.json");
/// @endcode
///
/// Layout: one track per process (tid = rank + 1, named "rank R"), grouped by
/// the core it ran on (pid = OS core + 1, named "core C"; Perfetto reserves
/// pid and tid 0 for the kernel's idle task). Spans (complete events, µs from
/// the log's creation; one clock, the time-stamp counter on x86-64, converted
/// to steady_clock's rate):
/// @verbatim
///   run         a process's whole body, first resume to finish
///   send        the moment a send is posted, on the sender's track (args src,
///               dst, bytes, tag, communicator); ssend for a synchronous one
///   receive     the message taken in, on the receiver's track (same args; for
///               a message above the eager limit its duration is the copy into
///               the receive's buffer); an arrow (flow) joins it to its send
///   wait        a process blocked, what for ("what") and on whom ("peer")
///   yield       a process letting the others of its core run
///   collective  barrier, allgather, allreduce, exclusive_scan, broadcast
///   phase       one phase of a static schedule (arg phase)
///   busy_lock   a DRS_N test-and-set on a receiver's lock (args dst, acquired);
///               "locked send" while the lock is held
/// @endverbatim
/// Libraries add their own spans with TraceSpan.
///
/// Cost: off (no log), every recording site is one branch on a pointer that the
/// job sets once; nothing is allocated and no atomic is touched. On, each
/// core's events go into a buffer of its own, allocated and touched before the
/// job starts and filled without locks; once a core's buffer is full its later
/// events are dropped and counted (dropped(), and "dropped_events" in the file).

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "switchyard/message.hpp"
#include "switchyard/process.hpp"

namespace switchyard {

namespace detail {
class TraceBuffer;
struct TraceEvent;
}  // namespace detail

/// A span's category: the trace-event "cat" field.
enum class TraceCategory : std::uint8_t {
  run,  ///< a process's whole body
  message,  ///< a send posted or a message taken in
  wait,  ///< a process blocked or yielding
  collective,  ///< a collective call
  phase,  ///< a phase of a static schedule
  lock,  ///< a busy-lock attempt
  user  ///< a library's or an application's own span
};

/// The arguments of a span; each one left at its default is not written.
struct TraceArgs {
  Rank src = kAnySource;  ///< the source rank ("peer" for a wait); kAnySource: none
  Rank dst = kAnySource;  ///< the destination rank; kAnySource: none
  bool has_bytes = false;  ///< whether `bytes` is written
  std::uint64_t bytes = 0;  ///< a message's size
  const char* label = nullptr;  ///< the name of `value` (a string literal); none when nullptr
  std::uint64_t value = 0;  ///< the numeric argument named `label`
};

/// Where the jobs that record a trace put their events; written once they are over.
/// Jobs record into one log one at a time (a second waits for the first).
class TraceLog {
 public:
  static constexpr std::size_t kDefaultEventsPerCore = std::size_t{1} << 18;  ///< 16 MiB per core
  static constexpr std::size_t kMaxEventsPerCore = std::size_t{1} << 26;  ///< the most a log takes per core

  /// A log whose jobs record up to `events_per_core` events per core (1 to
  /// kMaxEventsPerCore, else InvalidArgument); later events are dropped.
  explicit TraceLog(std::size_t events_per_core = kDefaultEventsPerCore);
  ~TraceLog();
  TraceLog(const TraceLog&) = delete;
  TraceLog& operator=(const TraceLog&) = delete;

  std::uint64_t events() const;  ///< recorded, over every core
  std::uint64_t dropped() const;  ///< not recorded: their core's buffer was full
  /// The Chrome trace-event JSON ({"traceEvents": [...], ...}).
  void write(std::ostream& out) const;
  /// Throws std::runtime_error naming the file if it cannot be written.
  void write_file(const std::string& path) const;

  // --- for the runtime ---
  /// Held while a job records: one job at a time.
  std::unique_lock<std::mutex> lock_for_job() { return std::unique_lock(job_mutex_); }
  /// The buffer of one core, made (and its memory touched) on first use.
  /// InvalidArgument if the buffers would take more than the machine allows (machine_memory.hpp).
  detail::TraceBuffer& buffer(int os_core, std::size_t cores_in_job);
  /// Process `rank` ran on `os_core`: it gets a named track even if it recorded nothing.
  void add_track(int os_core, Rank rank);
  /// A job starts recording (its buffers are made): numbers it.
  void start_job();
  /// The job is over: spans it left open (processes blocked when it failed) end now.
  void end_job();

 private:
  std::size_t events_per_core_;
  /// At creation, on the trace's clock and on steady_clock: time 0 of the file,
  /// and with a second reading when it is written, the clock's rate.
  std::uint64_t origin_ticks_, origin_ns_;
  std::map<int, std::unique_ptr<detail::TraceBuffer>> buffers_;  ///< by OS core
  std::set<std::pair<int, Rank>> tracks_;
  std::uint32_t jobs_ = 0;
  std::mutex job_mutex_;
};

/// A span on the calling process's track, from construction to destruction,
/// when its job records a trace; otherwise one branch and nothing else. `name`
/// must outlive the trace (a string literal). May live across co_await.
class TraceSpan {
 public:
  /// Opens a span named `name` of `category`, with `args`, on p's track; p is the calling process.
  TraceSpan(Process& p, TraceCategory category, const char* name, TraceArgs args = {}) noexcept;
  ~TraceSpan() {
    if (event_) [[unlikely]]
      finish();
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;
  /// Sets (or replaces) the numeric argument, e.g. set("acquired", 1).
  void set(const char* label, std::uint64_t value) noexcept {
    if (event_) [[unlikely]]
      set_value(label, value);
  }

 private:
  void begin(Process& p, TraceCategory category, const char* name, const TraceArgs& args) noexcept;
  void finish() noexcept;
  void set_value(const char* label, std::uint64_t value) noexcept;
  detail::TraceEvent* event_ = nullptr;
};

inline TraceSpan::TraceSpan(Process& p, TraceCategory category, const char* name, TraceArgs args) noexcept {
  if (p.trace_) [[unlikely]]
    begin(p, category, name, args);
}

}  // namespace switchyard
