#pragma once
/// @file
/// A receiver's busy lock (Wang-Lin-Ranka's busy_lock): one test-and-set flag per
/// process, operated on directly by every other process. DRS_N senders
/// try_acquire the receiver's lock before sending and release it once the
/// receiver has taken the message in, so a receiver takes one message at a time.

#include <atomic>
#include <cstddef>
#include <new>

#include "switchyard/cache_line.hpp"

namespace switchyard {

/// One receiver's busy lock: a test-and-set flag on a cache line of its own.
class alignas(kCacheLine) BusyLock {
 public:
  /// Takes the lock if it is free: true if this call took it. Never waits.
  /// Acquire pairs with the release in release(): whatever the previous holder
  /// wrote before releasing is visible to the next holder.
  bool try_acquire() noexcept {
    if (flag_.test(std::memory_order_relaxed)) return false;  // cheap read first: avoids bouncing the line on failure
    return !flag_.test_and_set(std::memory_order_acquire);
  }
  /// Gives the lock back; only its holder calls it.
  void release() noexcept { flag_.clear(std::memory_order_release); }
  /// A snapshot for diagnostics and statistics; never a substitute for try_acquire.
  bool held() const noexcept { return flag_.test(std::memory_order_relaxed); }

 private:
  /// Written by any process on any core; alignas(kCacheLine) gives it a whole
  /// cache line, so no padding member is needed.
  std::atomic_flag flag_;
};
static_assert(sizeof(BusyLock) == kCacheLine && alignof(BusyLock) == kCacheLine,
              "one busy lock per cache line, so contention on one receiver does not slow its neighbours");

}  // namespace switchyard
