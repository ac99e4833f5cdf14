#pragma once
// The one place where switchyard waits by spinning. Every idle loop goes through
// Backoff so that a waiting thread first burns a few cycles (the event is usually
// a cache-line transfer away), then gives its core to other threads, and only then
// blocks in the kernel. A blocked software process never spins: only workers do.

#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace switchyard::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Backoff {
 public:
  // Spin: the first kChecksWithoutPause checks back to back (an answer is
  // typically a cache line's transfer away, and a pause there would add up to
  // its own length to the time the arrival is noticed), then one pause between
  // checks (an arrival is noticed within tens of nanoseconds), for as long as
  // a large single-copy transfer takes (a copy of a few MiB), since a worker
  // that fell asleep meanwhile would pay a futex wake-up on every message.
  // Then yield for a while, then block.
  static constexpr std::chrono::microseconds kSpinFor{250};
  static constexpr std::chrono::microseconds kYieldFor{250};
  static constexpr std::uint32_t kChecksPerClockRead = 64;  // a clock read costs several checks: read it rarely
  static constexpr std::uint32_t kChecksWithoutPause = 256;  // a few microseconds of a worker's empty polls

  void reset() noexcept {
    step_ = 0;
    elapsed_ = {};
  }
  // Yields to the kernel so far (never reset): a statistic.
  std::uint64_t yields() const noexcept { return yields_; }

  // Waits a little longer than last time. `block` is called once spinning and
  // yielding have not helped; it must return when there may be something to do.
  template <class Block>
  void wait(Block&& block) {
    if (step_ == 0) started_ = std::chrono::steady_clock::now();
    if (step_ % kChecksPerClockRead == 0 && step_ != 0) elapsed_ = std::chrono::steady_clock::now() - started_;
    ++step_;
    if (step_ <= kChecksWithoutPause) {
      // Back to back: no pause yet.
    } else if (elapsed_ < kSpinFor) {
      cpu_relax();
    } else if (elapsed_ < kSpinFor + kYieldFor) {
      ++yields_;
      std::this_thread::yield();
      elapsed_ = std::chrono::steady_clock::now() - started_;
    } else {
      block();
    }
  }

 private:
  std::uint64_t step_ = 0;
  std::uint64_t yields_ = 0;
  std::chrono::steady_clock::time_point started_{};
  std::chrono::steady_clock::duration elapsed_{};
};

}  // namespace switchyard::detail
