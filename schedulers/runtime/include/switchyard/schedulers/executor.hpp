#pragma once
/// @file
/// Executes a phased Schedule on the runtime, loosely synchronously (Ranka-Wang-
/// Fox Section 5): no barrier between phases. Each process walks its own slice
/// of the schedule, one phase group at a time: it posts every receive of the
/// phase, then every send, then waits for the receives (handing each message
/// over as it completes) and the sends, and moves straight on to its next
/// phase, whatever the others do. This cannot deadlock, contention or not:
/// every transfer of phase k is posted by both ends once they have finished
/// their phases before k, so by induction on k every phase completes.
///
/// A valid static schedule gives each process one step per phase (one send and
/// one receive at most). A schedule with contention (a process receiving
/// several transfers in one phase, as array redistribution's naive schedule)
/// gives it several consecutive steps of the same phase: one group.
///
/// The executor works on comm.library(kScheduleExecutorLibrary): its tags (the
/// phase numbers) never meet the caller's messages.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_hooks.hpp"
#include "switchyard/schedulers/payload.hpp"
#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers {

/// The key of the communicator duplicate the executor runs on.
inline constexpr LibraryKey kScheduleExecutorLibrary{"switchyard.schedule_executor"};

/// One step of one process: at most one send and one receive, each a byte range
/// of one matrix entry, named by its index in the process's row (send) or column
/// (receive), i.e. in ExchangeBuffers::row() / column().
struct PlanStep {
  /// An entry index meaning "no send" ("no receive") in this step.
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t phase = 0;  ///< the schedule's phase this step belongs to
  Tag tag = 0;  ///< phase mod 2^31: the pieces of one message sent in different phases never match the wrong receive
  std::uint32_t send_entry = kNone;  ///< index in the process's row, or kNone
  Rank send_to = 0;  ///< the send's destination
  std::uint64_t send_offset = 0,  ///< first byte of the piece sent, in its message
      send_bytes = 0;  ///< length of the piece sent
  std::uint32_t recv_entry = kNone;  ///< index in the process's column, or kNone
  Rank recv_from = 0;  ///< the receive's source
  std::uint64_t recv_offset = 0,  ///< first byte of the piece received, in its message
      recv_bytes = 0;  ///< length of the piece received
  /// The same message's entry at the other end: the send's in its receiver's
  /// column, the receive's in its sender's row (a compiled run copies between
  /// those entries, compiled_exchange.hpp).
  std::uint32_t send_peer_entry = kNone;
  std::uint32_t recv_peer_entry = kNone;  ///< see send_peer_entry
  /// Which pieces open and close a message split over several phases: the run
  /// calls ExchangeHooks::before_send on the first, after_receive on the last.
  bool first_send_piece = true;
  bool last_recv_piece = true;  ///< see first_send_piece
};

/// A process's slice of a Schedule: its steps in phase order, without the
/// phases in which it neither sends nor receives.
struct ProcessPlan {
  Rank rank = 0;  ///< the process it belongs to
  std::vector<PlanStep> steps;  ///< in phase order
};

/// Every process's plan, in one pass over the schedule: O(n + transfers log d).
/// The schedule must be valid for `m` (validate() with the same contention);
/// throws InvalidArgument for a transfer that is not an entry of `m` and, unless
/// contention is allowed, for a process sending or receiving twice in a phase.
std::vector<ProcessPlan> make_process_plans(const Schedule& s, const CommMatrix& m,
                                            Contention contention = Contention::forbidden);

/// Runs comm.rank()'s plan. `sends` and `receives` are its row and column
/// (destinations / sources and sizes, sorted by peer), `hooks` reach their
/// bytes. Throws InvalidArgument, before posting anything, if the plan belongs
/// to another rank, a step lies outside its entry or a hook's buffer is not its
/// entry's size; and if a message arrives with the wrong size.
Task<void> execute(const Communicator& comm, const ProcessPlan& plan, std::span<const MatrixEntry> sends,
                   std::span<const MatrixEntry> receives, ExchangeHooks& hooks);
/// The same with the buffers of ExchangeBuffers, which must be comm.rank()'s.
Task<void> execute(const Communicator& comm, const ProcessPlan& plan, ExchangeBuffers& buffers);

}  // namespace switchyard::schedulers
