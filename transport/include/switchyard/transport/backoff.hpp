#pragma once
// The one place where switchyard waits by spinning. Every idle loop goes through
// Backoff so that a waiting thread first burns a few cycles (the event is usually
// a cache-line transfer away), then gives its core to other threads, and only then
// blocks in the kernel. A blocked software process never spins: only workers do.

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
  // One pause between checks (an arrival is noticed within ~20 ns) for some
  // tens of microseconds, then ~50 sched_yield calls, then block.
  static constexpr std::uint32_t kSpinSteps = 2048;
  static constexpr std::uint32_t kYieldSteps = kSpinSteps + 50;

  void reset() noexcept { step_ = 0; }

  // Waits a little longer than last time. `block` is called once spinning and
  // yielding have not helped; it must return when there may be something to do.
  template <class Block>
  void wait(Block&& block) {
    if (step_ < kSpinSteps) {
      cpu_relax();
    } else if (step_ < kYieldSteps) {
      std::this_thread::yield();
    } else {
      block();
      return;
    }
    ++step_;
  }

  bool spinning() const noexcept { return step_ < kSpinSteps; }

 private:
  std::uint32_t step_ = 0;
};

}  // namespace switchyard::detail
