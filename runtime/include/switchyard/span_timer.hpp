#pragma once
// Times an operation of a whole job, repeated: per repetition, the span from
// the first process to start it to the last one to finish it. Each process
// stamps its own start and end. Stamps of different processes are on
// different cache lines: processes of different cores stamp at the same
// instant, and a line shared between them would put transfers between cores
// inside the very interval being measured.
//
// Across nodes each node holds only its own processes' stamps, and clocks of
// different machines need not agree (steady_clock counts from each one's
// boot): milliseconds(runtime) takes each repetition's span on every node and
// reports the longest. It misses at most the skew with which the nodes left
// the barrier before the operation; on one node it is milliseconds() itself.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "switchyard/cache_line.hpp"
#include "switchyard/message.hpp"
#include "switchyard/node_reduction.hpp"
#include "switchyard/runtime.hpp"

namespace switchyard {

class SpanTimer {
 public:
  using Clock = std::chrono::steady_clock;

  SpanTimer(Rank processes, std::uint32_t repetitions)
      : processes_(processes), repetitions_(repetitions), stamps_(std::size_t{processes} * repetitions) {}

  void start(std::uint32_t repetition, Rank r) noexcept { at(repetition, r).start = Clock::now(); }
  void end(std::uint32_t repetition, Rank r) noexcept { at(repetition, r).end = Clock::now(); }

  // From the earliest start to the latest end of one repetition, over ranks
  // [first, end) (all of them by default; none: zero).
  Clock::duration span(std::uint32_t repetition, Rank first = 0, Rank end = kAnySource) const noexcept {
    end = std::min(end, processes_);
    if (first >= end) return Clock::duration::zero();
    const Stamps* row = &stamps_[std::size_t{repetition} * processes_];
    Clock::time_point from = row[first].start, to = row[first].end;
    for (Rank r = first + 1; r < end; ++r) {
      from = std::min(from, row[r].start);
      to = std::max(to, row[r].end);
    }
    return to - from;
  }
  // Every repetition's span, in milliseconds, in order.
  std::vector<double> milliseconds() const {
    std::vector<double> out;
    for (std::uint32_t k = 0; k < repetitions_; ++k) {
      out.push_back(std::chrono::duration<double, std::milli>(span(k)).count());
    }
    return out;
  }
  // The same for a job across nodes (see above); every node calls it after
  // the job. One MPI reduction of its own: a caller with several timers (and
  // counts) to combine adds each one's node_spans() to one NodeReduction.
  std::vector<double> milliseconds(Runtime& runtime) const {
    NodeReduction over;
    const auto spans = over.add(node_spans(runtime), NodeReduction::kMax);
    over.combine(runtime);
    return to_milliseconds(over.result(spans));
  }
  // This node's span of each repetition, over the ranks it hosts, in
  // nanoseconds: their maxima over the nodes (NodeReduction::kMax) are the spans.
  std::vector<std::int64_t> node_spans(const Runtime& runtime) const {
    const RankRange mine = runtime.local_ranks(processes_);
    std::vector<std::int64_t> spans(repetitions_);
    for (std::uint32_t k = 0; k < repetitions_; ++k) {
      const auto d = span(k, static_cast<Rank>(mine.first), static_cast<Rank>(mine.end));
      spans[k] = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    }
    return spans;
  }
  static std::vector<double> to_milliseconds(std::span<const std::int64_t> nanoseconds) {
    std::vector<double> out;
    for (const std::int64_t ns : nanoseconds) out.push_back(static_cast<double>(ns) / 1e6);
    return out;
  }

 private:
  struct alignas(kCacheLine) Stamps {  // written by one process only
    Clock::time_point start, end;
  };
  static_assert(kOwnsCacheLines<Stamps>, "shared across cores: cache lines of its own");
  Stamps& at(std::uint32_t repetition, Rank r) noexcept { return stamps_[std::size_t{repetition} * processes_ + r]; }

  Rank processes_;
  std::uint32_t repetitions_;
  std::vector<Stamps> stamps_;
};

}  // namespace switchyard
