#pragma once
// The sleeping processes of one core, earliest deadline first: a binary heap
// in a vector reserved for every process of the core when a job starts. A
// process is in it at most once (it sleeps once at a time, and a sleeper is
// woken only by its deadline or by the job's cancellation, after which nothing
// sleeps again), so a sleep never allocates. Touched by its worker alone.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace switchyard {
class Process;
}

namespace switchyard::detail {

class TimerHeap {
 public:
  using Clock = std::chrono::steady_clock;

  void reset(std::size_t capacity) {
    entries_.clear();
    entries_.reserve(capacity);
  }
  bool empty() const noexcept { return entries_.empty(); }
  std::size_t size() const noexcept { return entries_.size(); }
  Clock::time_point earliest() const noexcept { return entries_.front().deadline; }

  void push(Clock::time_point deadline, Process* p) {
    entries_.push_back(Entry{deadline, p});
    std::push_heap(entries_.begin(), entries_.end(), later);
  }

  // Takes out every entry whose deadline is at or before `now`, earliest
  // first, and hands its process to expire(process).
  template <class Expire>
  void expire_until(Clock::time_point now, Expire&& expire) {
    while (!entries_.empty() && entries_.front().deadline <= now) {
      std::pop_heap(entries_.begin(), entries_.end(), later);
      Process* p = entries_.back().process;
      entries_.pop_back();
      expire(p);
    }
  }

 private:
  struct Entry {
    Clock::time_point deadline;
    Process* process;
  };
  // std::push_heap keeps the largest first: "larger" is the later deadline reversed.
  static bool later(const Entry& a, const Entry& b) noexcept { return a.deadline > b.deadline; }
  std::vector<Entry> entries_;
};

}  // namespace switchyard::detail
