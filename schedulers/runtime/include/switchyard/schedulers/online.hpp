#pragma once
/// @file
/// The online schemes: no schedule table, every process decides as it goes.
///
/// AC (Ranka-Wang-Fox Fig. 2, Wang-Lin-Ranka 3.1): post every receive, send
/// every message, then wait for all of them.
///
/// DRS_N (Wang-Lin-Ranka Fig. 5): distributed random scheduling avoiding node
/// contention. Each receiver has a busy lock; a sender test-and-sets the lock
/// of a destination picked from its pending messages, and only on success sends
/// it, synchronously, releasing the lock once the receiver has taken the message
/// in. So a receiver takes in one DRS_N message at a time.
///
/// Each works on its own duplicate of the caller's communicator (kAcLibrary,
/// kDrsnLibrary), busy locks included. Both take either an ExchangeBuffers or a
/// process's sends and receives with the hooks that reach their bytes
/// (exchange_hooks.hpp): before_send just before a message is posted,
/// after_receive once its receive is complete.

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "switchyard/cache_line.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/compiled_exchange.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_hooks.hpp"
#include "switchyard/schedulers/payload.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers {

/// Tag of AC's and DRS_N's messages, each on its own duplicate of the caller's communicator.
inline constexpr Tag kOnlineTag = 0;
/// The key of AC's communicator duplicate.
inline constexpr LibraryKey kAcLibrary{"switchyard.ac"};
/// The key of DRS_N's communicator duplicate (its busy locks included).
inline constexpr LibraryKey kDrsnLibrary{"switchyard.drsn"};

/// What execute_ac may be told.
struct AcOptions {
  /// Strip mining: at most this many receives and at most this many sends
  /// outstanding at a time; 0 = unlimited (the papers' AC). In MPI
  /// implementations strip mining keeps a flood of sends from exhausting the
  /// receivers' buffers and deadlocking; switchyard cannot deadlock that way (a
  /// full core-to-core ring leaves the packets in a sender-side backlog), so
  /// here it only bounds the requests, and unexpected messages, in flight.
  std::size_t strip = 0;
};

/// AC for comm.rank(): receives from buffers.column(), sends buffers.row(). Both
/// are walked in the order of the distance (dst - src) mod n, the sends from
/// the nearest destination up, the receives from the nearest source up: at
/// every step the senders aim at different receivers (a cyclic shift) rather
/// than all at the lowest rank. With strip mining, that common order is what
/// keeps the windows deadlock-free: the unfinished message of smallest
/// distance is inside the send window of its sender and the receive window of
/// its receiver (both retire in order), so it completes, and by induction every
/// message does.
Task<void> execute_ac(const Communicator& comm, ExchangeBuffers& buffers, AcOptions options = {});
/// The same for `sends` and `receives` (destinations / sources and sizes,
/// sorted by peer) and the hooks that reach their bytes. Throws InvalidArgument,
/// before posting anything, if a hook's buffer is not its entry's size.
Task<void> execute_ac(const Communicator& comm, std::span<const MatrixEntry> sends,
                      std::span<const MatrixEntry> receives, ExchangeHooks& hooks, AcOptions options = {});

/// For tests: counts the DRS_N senders transferring to each receiver at once.
/// A sender enters after acquiring the receiver's busy lock and leaves before
/// releasing it; max_in_flight() is the most ever seen at one receiver, which
/// the busy lock keeps at 1.
class BusyLockMonitor final : public BusyLockObserver {
 public:
  /// One receiver's count, on cache lines of its own.
  struct alignas(kCacheLine) Counter {
    /// Senders transferring to this receiver now (enter() adds, leave() takes away).
    /// Relaxed: a count for tests, read for a maximum; the busy lock it watches
    /// orders the transfers themselves, not this count.
    std::atomic<int> in_flight{0};
  };
  static_assert(kOwnsCacheLines<Counter>, "shared across cores: cache lines of its own");
  /// Counts into counters of its own, one per process of the job.
  explicit BusyLockMonitor(Rank processes);
  /// Counts into the caller's counters (one per process, all 0), which other
  /// monitors may count into too: one monitor per node of a job whose nodes
  /// share a machine, over counters in memory they all map, sees the senders
  /// of every node. max_in_flight() is then the most this monitor's senders saw.
  explicit BusyLockMonitor(std::span<Counter> counters) noexcept : counters_(counters.data()) {}
  void enter(Rank receiver) noexcept override;  ///< a sender holding receiver's busy lock starts its transfer
  void leave(Rank receiver) noexcept override;  ///< that sender is done, about to release the lock
  /// The most senders seen at one receiver at once (all of the job's once it is over).
  int max_in_flight() const noexcept { return max_.load(std::memory_order_relaxed); }
  /// Transfers this monitor counted (enter() calls).
  std::uint64_t transfers() const noexcept { return transfers_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<Counter[]> owned_;
  Counter* counters_;
  std::atomic<int> max_{0};
  std::atomic<std::uint64_t> transfers_{0};
};

/// What execute_drsn may be told.
struct DrsnOptions {
  /// The order of each process's pending messages is shuffled with a stream
  /// seeded from (seed, rank).
  std::uint64_t seed = 0;
  /// Yields after a pass over the pending messages in which every busy lock
  /// was taken (the paper's optional retry delay). At least 1: a sender whose
  /// destinations are all busy lets its core run the others, which is what
  /// makes the locks free up when they share its core.
  std::uint32_t retry_yields = 1;
  BusyLockMonitor* monitor = nullptr;  ///< tests: told of every transfer; none by default
};

/// What one execute_drsn run of one process did.
struct DrsnStats {
  std::uint64_t inquiries = 0;  ///< busy-lock test-and-set attempts, successful ones included
  std::uint64_t messages = 0;  ///< sent
};

/// DRS_N for comm.rank(), given its receiving vector `recvl` (Generate_Recv's
/// result: sources and sizes, sorted by source). A collective: it starts with
/// a barrier, so that no busy lock is taken while a member is still in an
/// earlier run (whose sender, holding a receiver's lock, would wait forever for
/// a receiver waiting for a sender that needs that lock). Pre-posts a receive
/// into the right buffer for every entry of recvl, sends buffers.row() as
/// above, then waits for the receives. Throws InvalidArgument if recvl
/// disagrees with the buffers (a source without a buffer, or a size that
/// differs).
Task<DrsnStats> execute_drsn(const Communicator& comm, std::span<const MatrixEntry> recvl, ExchangeBuffers& buffers,
                             DrsnOptions options = {});
/// The same for `sends` and `receives` (the receiving vector), with the hooks
/// that reach their bytes. Throws InvalidArgument, before posting anything, if
/// `receives` is not sorted by source or a hook's buffer is not its entry's size.
Task<DrsnStats> execute_drsn(const Communicator& comm, std::span<const MatrixEntry> sends,
                             std::span<const MatrixEntry> receives, ExchangeHooks& hooks, DrsnOptions options = {});

}  // namespace switchyard::schedulers
