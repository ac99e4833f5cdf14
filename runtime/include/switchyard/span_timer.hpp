#pragma once
/// @file
/// Times an operation of a whole job, repeated: per repetition, the span from
/// the first process to start it to the last one to finish it. Every process of
/// the job stamps its start and its end of every repetition, but only two
/// stamps per core read the clock: the first process of its core to start and
/// the last one to end. The processes of a core run one at a time, so a count
/// per core says which ones those are. A clock read per process (tens of nanoseconds,
/// and a cache line of its own) would add the benchmark's own cost to every
/// process of the operation: half of the time of a job that only resumes its
/// processes once, and more than a small exchange's copying. The counts of
/// different cores are on different cache lines: cores stamp at the same
/// instant, and a shared line would put transfers between cores inside the
/// very interval being measured.
///
/// Across nodes each node holds only its own cores' stamps, and clocks of
/// different machines need not agree (steady_clock counts from each one's
/// boot): milliseconds(runtime) takes each repetition's span on every node and
/// reports the longest. It misses at most the skew with which the nodes left
/// the barrier before the operation; on one node it is milliseconds() itself.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/assert.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/node_reduction.hpp"
#include "switchyard/process.hpp"
#include "switchyard/runtime.hpp"

namespace switchyard {

/// The spans of an operation of a whole job, per repetition (see the file's
/// description). Every process stamps start() and end() of every repetition.
class SpanTimer {
 public:
  using Clock = std::chrono::steady_clock;  ///< the clock of the stamps
  /// For jobs of `runtime`: stamps of this node's cores.
  SpanTimer(const Runtime& runtime, std::uint32_t repetitions)
      : cores_(runtime.cores().size()), repetitions_(repetitions), stamps_(cores_ * repetitions) {}
  /// Process `p` starts repetition `repetition`; the first of its core reads the clock.
  void start(std::uint32_t repetition, const Process& p) noexcept {
    CoreStamps& s = at(repetition, p);
    if (s.started++ == 0) {
      s.first_start = Clock::now();
      s.processes = p.processes_on_core();
    }
  }
  /// Process `p` ends repetition `repetition`; the last of its core reads the clock.
  void end(std::uint32_t repetition, const Process& p) noexcept {
    CoreStamps& s = at(repetition, p);
    if (++s.ended == s.processes) s.last_end = Clock::now();
  }
  /// This node's earliest start and latest end of one repetition (both the
  /// clock's zero if no process of this node stamped it). InvalidArgument if
  /// some but not all of a core's processes stamped it: the span would miss
  /// the others.
  std::pair<Clock::time_point, Clock::time_point> bounds(std::uint32_t repetition) const {
    const CoreStamps* row = &stamps_[std::size_t{repetition} * cores_];
    std::pair<Clock::time_point, Clock::time_point> out{Clock::time_point::max(), Clock::time_point::min()};
    for (std::size_t c = 0; c < cores_; ++c) {
      if (row[c].started == 0 && row[c].ended == 0) continue;
      if (row[c].started != row[c].processes || row[c].ended != row[c].processes) {
        throw InvalidArgument("SpanTimer, repetition " + std::to_string(repetition) + ": of the " +
                              std::to_string(row[c].processes) + " processes of core " + std::to_string(c) + ", " +
                              std::to_string(row[c].started) + " started and " + std::to_string(row[c].ended) +
                              " ended; every process of the job stamps both, once");
      }
      out.first = std::min(out.first, row[c].first_start);
      out.second = std::max(out.second, row[c].last_end);
    }
    return out.first <= out.second ? out : std::pair<Clock::time_point, Clock::time_point>{};
  }
  /// From the earliest start to the latest end of one repetition on this node.
  Clock::duration span(std::uint32_t repetition) const {
    const auto [from, to] = bounds(repetition);
    return to - from;
  }
  /// Every repetition's span, in milliseconds, in order.
  std::vector<double> milliseconds() const {
    std::vector<double> out;
    for (std::uint32_t k = 0; k < repetitions_; ++k) {
      out.push_back(std::chrono::duration<double, std::milli>(span(k)).count());
    }
    return out;
  }
  /// The same for a job across nodes (see above); every node calls it after
  /// the job. One MPI reduction of its own: a caller with several timers (and
  /// counts) to combine adds each one's node_spans() to one NodeReduction.
  std::vector<double> milliseconds(Runtime& runtime) const {
    NodeReduction over;
    const auto spans = over.add(node_spans(), NodeReduction::kMax);
    over.combine(runtime);
    return to_milliseconds(over.result(spans));
  }
  /// This node's span of each repetition, over the processes it hosts, in
  /// nanoseconds: their maxima over the nodes (NodeReduction::kMax) are the spans.
  std::vector<std::int64_t> node_spans() const {
    std::vector<std::int64_t> spans(repetitions_);
    for (std::uint32_t k = 0; k < repetitions_; ++k) {
      spans[k] = std::chrono::duration_cast<std::chrono::nanoseconds>(span(k)).count();
    }
    return spans;
  }
  /// Nanoseconds (as node_spans() gives them) in milliseconds.
  static std::vector<double> to_milliseconds(std::span<const std::int64_t> nanoseconds) {
    std::vector<double> out;
    for (const std::int64_t ns : nanoseconds) out.push_back(static_cast<double>(ns) / 1e6);
    return out;
  }

 private:
  struct alignas(kCacheLine) CoreStamps {  // written by one core's processes only, one at a time
    Clock::time_point first_start, last_end;
    std::uint32_t processes = 0;  ///< of the core, noted by the first to start
    std::uint32_t started = 0, ended = 0;
  };
  static_assert(kOwnsCacheLines<CoreStamps>, "shared across cores: cache lines of its own");
  CoreStamps& at(std::uint32_t repetition, const Process& p) noexcept {
    SWITCHYARD_ASSERT(repetition < repetitions_ && p.core_index() < cores_);
    return stamps_[std::size_t{repetition} * cores_ + p.core_index()];
  }
  std::size_t cores_;
  std::uint32_t repetitions_;
  std::vector<CoreStamps> stamps_;
};

}  // namespace switchyard
