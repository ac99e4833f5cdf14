#pragma once
/// @file
/// Generate_Recv (Wang-Lin-Ranka Section 3): every process knows only its
/// sending vector sendl (its row of COM: destinations and sizes) and learns its
/// receiving vector recvl (its column: sources and sizes). Two ways, both
/// returning recvl sorted by source:
///
///  - by concatenation: every sendl concatenated, from which each process
///    picks its column. The rows are gathered per core, not per process
///    (Communicator::allgather_split): each core holds one copy and hands each
///    of its processes only its column. O(n + messages) per core, O(column)
///    per process; every process reading all rows was O(n * messages) in all.
///  - by active messages (Fig. 1): each process sends one active message per
///    entry of sendl to its destination, whose handler appends (source, size)
///    to the destination's list. Fig. 1 learns when a list is complete from a
///    vector sum of the 0/1 send masks, n entries on each of n processes:
///    8 n^2 bytes, 80 GB at n = 100 000 however sparse the matrix. Here a sum of
///    one number, the messages sent, says how many lists will hold in all, and
///    sums of what the lists hold are repeated until they reach it (lists only
///    grow, so it is never reached early). O(d) per process, O(n + messages) in
///    all, and usually two sums of one number.
///
/// Both are collectives over a communicator (ranks are its ranks) and work on
/// its duplicate reserved for them, comm.library(kGenerateRecvLibrary).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "switchyard/cache_line.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/process.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers {

/// The key of the communicator duplicate both ways of Generate_Recv run on.
inline constexpr LibraryKey kGenerateRecvLibrary{"switchyard.generate_recv"};

/// A collective: every member of comm calls it, with its row sorted by
/// destination (CommMatrix::row). Throws InvalidArgument for a destination
/// outside the communicator or an unsorted row.
Task<std::vector<MatrixEntry>> generate_recv_concat(const Communicator& comm, std::span<const MatrixEntry> sendl);

/// Generate_Recv by active messages. One object per job: it holds each
/// process's list and count, written by the handler on that process's core.
/// install() it on the job's RunOptions, then have every member of a
/// communicator call run() (a collective). Calls of run() may repeat within a
/// job, on any communicator; each one starts afresh.
class GenerateRecvByActiveMessages {
 public:
  /// The active-message handler id it asks for: "GR" and 1. install() takes
  /// the next free id above it if another handler has it already.
  static constexpr HandlerId kHandlerId = 0x4752'0001;

  /// `processes`: the job's.
  explicit GenerateRecvByActiveMessages(Rank processes);
  GenerateRecvByActiveMessages(const GenerateRecvByActiveMessages&) = delete;
  GenerateRecvByActiveMessages& operator=(const GenerateRecvByActiveMessages&) = delete;

  /// Registers the handler (bound to this object, which must outlive the job)
  /// and returns its id.
  HandlerId install(RunOptions& options);
  /// comm's receiving vector of this member, in ranks of comm. Throws
  /// InvalidArgument if the object was not installed or is for another job size.
  Task<std::vector<MatrixEntry>> run(const Communicator& comm, std::span<const MatrixEntry> sendl);

 private:
  /// Touched only on its process's core: by the process and by the handler
  /// running there for it. A cache line each, so neighbours on other cores do
  /// not share one. Indexed by job rank: a process is in one run at a time,
  /// whatever its communicator.
  struct alignas(kCacheLine) Slot {
    std::vector<MatrixEntry> received;
  };
  static_assert(kOwnsCacheLines<Slot>, "shared across cores: cache lines of its own");
  void on_message(Process& self, Rank src, std::span<const std::byte> body);
  Task<std::vector<MatrixEntry>> run_on(Communicator comm, std::span<const MatrixEntry> sendl);

  Rank processes_;
  std::optional<HandlerId> handler_;  ///< set by install()
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace switchyard::schedulers
