#pragma once
// How a worker sleeps in the kernel and how others wake it, without a fence on
// the waker's side.
//
// The race to avoid: a waker publishes work (pushes into a ring) and checks
// whether the worker sleeps; the worker announces it sleeps and checks for
// work. If each side reads before its own store is visible to the other, the
// worker sleeps on work nobody will wake it for. The textbook fix is a full
// fence on both sides, and it would sit on the wake-up path of every batch.
// Here the sleeper pays for both (Seastar's approach): before it checks for
// work it runs a process-wide memory barrier (Linux membarrier, private
// expedited), which executes a full barrier on every other running thread of
// the process. Whatever a waker stored before that barrier point is then
// visible to the sleeper's check; a waker that reaches its check after that
// point sees `sleeping` set, because the sleeper stored it before the
// membarrier call. Either way the wake-up is not lost, and the waker's check is
// a plain load of a line that stays in its cache while the peer is awake.
// Where membarrier is not available the waker falls back to a full fence.
//
// A barrier on every thread costs more than it saves where wakers are rare:
// an owner with no job to run is woken only when a job is handed to it or it
// is told to stop. It sleeps with WokenBy::fenced_rings then: a full fence of
// its own instead of the barrier, which the rare wakers match with one of
// theirs (ring_fenced). On a VM the barrier interrupts every other core of the
// process; taken after every job, it delayed the next job's start and the
// caller's return by tens of microseconds (docs/benchmarks.md).

#include <atomic>
#include <chrono>
#include <semaphore>

#include "switchyard/cache_line.hpp"

namespace switchyard::detail {

// The sleeper's half: a full barrier on every thread of the process. Returns
// false (and does nothing) where the kernel refuses it.
bool process_wide_barrier() noexcept;
// The waker's half: nothing where process_wide_barrier() works, a full fence otherwise.
void waker_barrier() noexcept;

class alignas(kCacheLine) Doorbell {
 public:
  // Which rings wake a sleep: any ring(), or only ring_fenced().
  enum class WokenBy : bool { any_ring, fenced_rings };

  // Called by anyone after publishing work for the owner.
  void ring() noexcept {
    waker_barrier();
    wake_if_sleeping();
  }
  // The same, for the rare wakers that an owner sleeping with
  // WokenBy::fenced_rings counts on: the fence pairs with that sleep's own, so
  // that either the owner's check sees the work or this check sees `sleeping_`.
  void ring_fenced() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    wake_if_sleeping();
  }

  // Called by the owner: sleeps up to `max` unless has_work() says there is
  // something to do once the barrier above (WokenBy::any_ring) or its own
  // fence (WokenBy::fenced_rings) has made every published item visible.
  template <class HasWork>
  void sleep(HasWork&& has_work, std::chrono::microseconds max, WokenBy woken_by = WokenBy::any_ring) {
    ++sleeps_;
    sleeping_.store(true, std::memory_order_relaxed);
    if (woken_by == WokenBy::fenced_rings || !process_wide_barrier()) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    if (has_work() || !wakeup_.try_acquire_for(max)) {
      // Nobody has woken us. If a waker did clear `sleeping_` meanwhile, its
      // release is on the way: take it, so that the next sleep does not return at once.
      if (!sleeping_.exchange(false, std::memory_order_acq_rel)) wakeup_.acquire();
    }
  }

  // Calls into the kernel so far: the owner's sleeps (each a barrier and
  // mostly a wait) and the wakers' wake-ups of it. For statistics: read by
  // the owner, or once it has stopped.
  std::uint64_t kernel_calls() const noexcept { return sleeps_ + wakes_.load(std::memory_order_relaxed); }

 private:
  void wake_if_sleeping() noexcept {
    if (sleeping_.load(std::memory_order_relaxed) && sleeping_.exchange(false, std::memory_order_acq_rel)) {
      wakes_.fetch_add(1, std::memory_order_relaxed);  // a statistic only: no order needed
      wakeup_.release();
    }
  }

  std::uint64_t sleeps_ = 0;  // the owner's
  std::atomic<std::uint64_t> wakes_{0};  // any waker's
  // Set by the owner before it checks for work and blocks; cleared by the one
  // waker whose exchange sees it set (that waker then releases the semaphore),
  // or by the owner itself when it gives up waiting.
  std::atomic<bool> sleeping_{false};
  std::counting_semaphore<> wakeup_{0};  // released by that one waker
};
static_assert(kOwnsCacheLines<Doorbell>, "shared across cores: cache lines of its own");

}  // namespace switchyard::detail
