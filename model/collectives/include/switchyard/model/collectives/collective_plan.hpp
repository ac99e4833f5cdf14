#pragma once
// The k-level algorithms of the C3 paper on real mailboxes. A CollectivePlan is
// built once per (communicator, operation, algorithm, message size), which
// splits the sub-machines off as sub-communicators and sizes every staging
// buffer, and is run many times without allocating.
//
//   auto plan = co_await CollectivePlan::create(comm, Operation::all_to_all, "2-lev-r,c", L);
//   co_await plan.run({send, recv});          // every member, same order
//   co_await collective(comm, Operation::one_to_all, "auto", {send, recv}, &machine);
//
// Buffers (L = the message size, p = comm.size(), root = the plan's root, rank 0
// of comm unless given):
//   one-to-all: root's send holds p blocks of L, block r for rank r (others: empty);
//               every recv holds L.
//   all-to-one: every send holds L; root's recv holds p blocks, block r from rank r.
//   all-to-all: send and recv hold p blocks of L: send block r goes to rank r,
//               recv block r came from rank r.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/model/collectives/choice.hpp"
#include "switchyard/model/collectives/operation.hpp"
#include "switchyard/model/collectives/transfer_log.hpp"
#include "switchyard/task.hpp"

namespace switchyard::model::collectives {

/// A collective's buffers on one member; their sizes per operation are in the file's description.
struct Buffers {
  std::span<const std::byte> send;  ///< what this member sends (empty where it sends nothing)
  std::span<std::byte> recv;  ///< where this member receives (empty where it receives nothing)
};

namespace detail {
class AlgorithmState;
}

/// One k-level algorithm of the C3 paper planned for a communicator, operation and
/// message size: sub-communicators split and staging sized once, so that run()
/// allocates nothing. Every member of the communicator makes and runs it in the same order.
class CollectivePlan {
 public:
  /// Collective over comm. `algorithm` is one of algorithm_names(op) (or any
  /// logp-lev-rec(gamma)), or "auto": the fewest units `machine` predicts for
  /// (op, p, L, root); "auto" without a machine is an InvalidArgument. `root`
  /// is the rank of comm that scatters (one-to-all) or gathers (all-to-one);
  /// all-to-all has none and requires 0. root >= p is an InvalidArgument.
  static Task<CollectivePlan> create(Communicator comm, Operation op, std::string algorithm, std::uint64_t bytes,
                                     const model::Machine* machine = nullptr, Rank root = 0);

  CollectivePlan(CollectivePlan&&) noexcept;  ///< takes over the other plan's communicators and staging
  CollectivePlan& operator=(CollectivePlan&&) noexcept;  ///< takes over the other plan's communicators and staging
  ~CollectivePlan();

  /// Collective over the plan's communicator; buffers as above (checked: a wrong
  /// size is an InvalidArgument naming the buffer).
  Task<void> run(Buffers buffers);

  Operation operation() const noexcept { return op_; }  ///< one-to-all, all-to-one or all-to-all
  const std::string& algorithm() const noexcept { return algorithm_; }  ///< the one auto chose, for auto
  std::uint64_t bytes() const noexcept { return bytes_; }  ///< L, the message size
  /// The rank of the communicator that scatters or gathers (0 for all-to-all).
  Rank root() const noexcept { return root_; }
  /// Every later run appends each message it sends to `log` (nullptr: stop).
  void record_into(TransferLog* log) noexcept { log_ = log; }

 private:
  CollectivePlan() = default;
  Communicator comm_;
  Operation op_ = Operation::one_to_all;
  std::string algorithm_;
  std::uint64_t bytes_ = 0;
  Rank root_ = 0;
  TransferLog* log_ = nullptr;
  std::unique_ptr<detail::AlgorithmState> state_;
};

/// Plans and runs once: for a collective run a single time.
Task<void> collective(Communicator comm, Operation op, std::string algorithm, Buffers buffers,
                      const model::Machine* machine = nullptr, Rank root = 0);

}  // namespace switchyard::model::collectives
