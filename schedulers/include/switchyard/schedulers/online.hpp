#pragma once
// The online schemes: no schedule table, every process decides as it goes.
//
// AC (Ranka-Wang-Fox Fig. 2, Wang-Lin-Ranka 3.1): post every receive, send
// every message, then wait for all of them.
//
// DRS_N (Wang-Lin-Ranka Fig. 5): distributed random scheduling avoiding node
// contention. Each receiver has a busy lock; a sender test-and-sets the lock
// of a destination picked from its pending messages, and only on success sends
// it, synchronously, releasing the lock once the receiver has taken the message
// in. So a receiver takes in one DRS_N message at a time.

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "switchyard/process.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/payload.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers {

// Tag of AC's and DRS_N's messages.
inline constexpr Tag kOnlineTag = 0;

struct AcOptions {
  // Strip mining: at most this many receives and at most this many sends
  // outstanding at a time; 0 = unlimited (the papers' AC). In MPI
  // implementations strip mining keeps a flood of sends from exhausting the
  // receivers' buffers and deadlocking; switchyard cannot deadlock that way (a
  // full core-to-core ring leaves the packets in a sender-side backlog), so
  // here it only bounds the requests, and unexpected messages, in flight.
  std::size_t strip = 0;
};

// AC for process p: receives from buffers.column(), sends buffers.row(). Both
// are walked in the order of the distance (dst - src) mod n, the sends from
// the nearest destination up, the receives from the nearest source up: at
// every step the senders aim at different receivers (a cyclic shift) rather
// than all at the lowest rank. With strip mining, that common order is what
// keeps the windows deadlock-free: the unfinished message of smallest
// distance is inside the send window of its sender and the receive window of
// its receiver (both retire in order), so it completes, and by induction every
// message does.
Task<void> execute_ac(Process& p, ExchangeBuffers& buffers, AcOptions options = {});

// For tests: counts the DRS_N senders transferring to each receiver at once.
// A sender enters after acquiring the receiver's busy lock and leaves before
// releasing it; max_in_flight() is the most ever seen at one receiver, which
// the busy lock keeps at 1.
class BusyLockMonitor {
 public:
  explicit BusyLockMonitor(Rank processes);
  void enter(Rank receiver) noexcept;
  void leave(Rank receiver) noexcept;
  int max_in_flight() const noexcept { return max_.load(std::memory_order_relaxed); }
  std::uint64_t transfers() const noexcept { return transfers_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Counter {
    std::atomic<int> in_flight{0};
  };
  std::unique_ptr<Counter[]> counters_;
  std::atomic<int> max_{0};
  std::atomic<std::uint64_t> transfers_{0};
};

struct DrsnOptions {
  // The order of each process's pending messages is shuffled with a stream
  // seeded from (seed, rank).
  std::uint64_t seed = 0;
  // Yields after a pass over the pending messages in which every busy lock
  // was taken (the paper's optional retry delay). At least 1: a sender whose
  // destinations are all busy lets its core run the others, which is what
  // makes the locks free up when they share its core.
  std::uint32_t retry_yields = 1;
  BusyLockMonitor* monitor = nullptr;
};

struct DrsnStats {
  std::uint64_t inquiries = 0;  // busy-lock test-and-set attempts, successful ones included
  std::uint64_t messages = 0;   // sent
};

// DRS_N for process p, given its receiving vector `recvl` (Generate_Recv's
// result: sources and sizes, sorted by source). Pre-posts a receive into the
// right buffer for every entry of recvl, sends buffers.row() as above, then
// waits for the receives. Throws InvalidArgument if recvl disagrees with the
// buffers (a source without a buffer, or a size that differs).
Task<DrsnStats> execute_drsn(Process& p, std::span<const MatrixEntry> recvl, ExchangeBuffers& buffers,
                             DrsnOptions options = {});

}  // namespace switchyard::schedulers
