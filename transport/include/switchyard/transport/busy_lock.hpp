#pragma once
// A receiver's busy lock (Wang-Lin-Ranka's busy_lock): one test-and-set flag per
// process, operated on directly by every other process. DRS_N senders
// try_acquire the receiver's lock before sending and release it once the
// receiver has taken the message in, so a receiver takes one message at a time.

#include <atomic>
#include <cstddef>
#include <new>

namespace switchyard {

class alignas(64) BusyLock {
 public:
  // Acquire pairs with the release in release(): whatever the previous holder
  // wrote before releasing is visible to the next holder.
  bool try_acquire() noexcept {
    if (flag_.test(std::memory_order_relaxed)) return false;  // cheap read first: avoids bouncing the line on failure
    return !flag_.test_and_set(std::memory_order_acquire);
  }
  void release() noexcept { flag_.clear(std::memory_order_release); }
  // A snapshot for diagnostics and statistics; never a substitute for try_acquire.
  bool held() const noexcept { return flag_.test(std::memory_order_relaxed); }

 private:
  // Written by any process on any core; alignas(64) gives it a whole cache
  // line, so no padding member is needed.
  std::atomic_flag flag_;
};
static_assert(sizeof(BusyLock) == 64 && alignof(BusyLock) == 64,
              "one busy lock per cache line, so contention on one receiver does not slow its neighbours");

}  // namespace switchyard
