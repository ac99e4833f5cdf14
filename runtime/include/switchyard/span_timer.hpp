#pragma once
// Times an operation of a whole job, repeated: per repetition, the span from
// the first process to start it to the last one to finish it. Each process
// stamps its own start and end. Stamps of different processes are on
// different cache lines: processes of different cores stamp at the same
// instant, and a line shared between them would put transfers between cores
// inside the very interval being measured.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "switchyard/transport/message.hpp"

namespace switchyard {

class SpanTimer {
 public:
  using Clock = std::chrono::steady_clock;

  SpanTimer(Rank processes, std::uint32_t repetitions)
      : processes_(processes), repetitions_(repetitions), stamps_(std::size_t{processes} * repetitions) {}

  void start(std::uint32_t repetition, Rank r) noexcept { at(repetition, r).start = Clock::now(); }
  void end(std::uint32_t repetition, Rank r) noexcept { at(repetition, r).end = Clock::now(); }

  // From the earliest start to the latest end of one repetition, over ranks
  // 0 .. among - 1 (all of them by default).
  Clock::duration span(std::uint32_t repetition, Rank among = kAnySource) const noexcept {
    const Stamps* first = &stamps_[std::size_t{repetition} * processes_];
    Clock::time_point from = first->start, to = first->end;
    for (Rank r = 1; r < std::min(among, processes_); ++r) {
      from = std::min(from, first[r].start);
      to = std::max(to, first[r].end);
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

 private:
  struct alignas(64) Stamps {  // written by one process only
    Clock::time_point start, end;
  };
  Stamps& at(std::uint32_t repetition, Rank r) noexcept { return stamps_[std::size_t{repetition} * processes_ + r]; }

  Rank processes_;
  std::uint32_t repetitions_;
  std::vector<Stamps> stamps_;
};

}  // namespace switchyard
