#include "doorbell.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace switchyard::detail {

namespace {

// Whether this process may use private expedited membarrier; registers once.
// Decided before any worker sleeps or rings (the first Doorbell use), and the
// same for every thread, so sleepers and wakers agree on who fences.
bool membarrier_available() noexcept {
  static const bool available = [] {
    const long commands = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return available;
}

}  // namespace

bool process_wide_barrier() noexcept {
  return membarrier_available() && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void waker_barrier() noexcept {
  if (membarrier_available()) {
    std::atomic_signal_fence(
        std::memory_order_seq_cst);  // the compiler must not sink the publishing store below the check
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

}  // namespace switchyard::detail
