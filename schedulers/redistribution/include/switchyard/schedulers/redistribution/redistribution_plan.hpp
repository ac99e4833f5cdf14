#pragma once
/// @file
/// A redistribution plan: everything about moving an array of doubles from one
/// Layout to another that does not depend on the data, computed once and
/// executed as often as needed: COM, the schedule, and for every pair of
/// processes that communicate the pack and unpack descriptors (LDD pieces in
/// local index space). Execution is the paper's sending and receiving parts
/// (Figs. 1 and 4): each source packs a message with LDD index arithmetic, the
/// schedule says in which step it goes, and each target unpacks what it
/// receives into its local array (local layout: see layout.hpp).
///
/// Schedule kinds:
/// @verbatim
///   naive          Fig. 1: step k, every source sends to target k (contention)
///   offset         Fig. 4: step k, source i sends to target (i + k) mod P'
///   table          the paper's contention-free tables (Algorithm 1 / 2); throws
///                  TableNotApplicable where the paper's method does not apply
///   optimal        schedule_optimal on COM in bytes: contention-free, exactly
///                  max(K, K') steps, for any redistribution
///   optimal-bytes  schedule_optimal_bytes: messages may be split into byte
///                  ranges over several steps, fewest bytes on the critical path
/// @endverbatim
///
/// Execution is an ExchangePlan (exchange_plan.hpp) of COM in bytes, without
/// its diagonal, and the kind's schedule, without its transfers to oneself,
/// loosely synchronous, one phase group per step, so it cannot deadlock,
/// contention or not. By default it is compiled (ExchangeExecution::compiled): the
/// plan pairs each message's strided runs in its source's local array with
/// those in its target's, once, and every run copies each element once,
/// straight from local_in into the target's local_out, run by run: no staging,
/// no packing. Through buffers (ExchangeExecution::messages, where the schedule
/// executor, executor.hpp, runs it, and a compiled run across nodes) a message
/// is packed into staging memory just before its first byte goes out and
/// unpacked as soon as its last byte is in. A message to oneself is a local
/// copy once the exchange is done. The processes of a redistribution are max(P, P'):
/// source i and target i are process i.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/schedulers/redistribution/layout.hpp"
#include "switchyard/schedulers/redistribution/redistribution_tables.hpp"
#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::redistribution {

/// The key of the communicator duplicate RedistributionPlan::run works on.
inline constexpr LibraryKey kRedistributionLibrary{"switchyard.redistribution"};

/// How a plan schedules its messages (the file's description lists them).
enum class ScheduleKind : std::uint8_t {
  naive,  ///< Fig. 1: in step k every source sends to target k
  offset,  ///< Fig. 4: in step k source i sends to target (i + k) mod P'
  table,  ///< the paper's contention-free tables (Algorithm 1 / 2)
  optimal,  ///< schedule_optimal on COM in bytes
  optimal_bytes  ///< schedule_optimal_bytes on COM in bytes
};

/// "naive", "offset", "table", "optimal", "optimal-bytes".
std::string_view name(ScheduleKind kind) noexcept;
/// The kind of one of those names, or nullopt.
std::optional<ScheduleKind> parse_schedule_kind(std::string_view text) noexcept;
/// Every kind, in the order above.
const std::vector<ScheduleKind>& all_schedule_kinds();

/// The paper's tables do not apply to this redistribution; what() says why.
class TableNotApplicable : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// Wall time of the parts of a plan's construction, in ms.
struct PlanTimings {
  double com_ms = 0;  ///< COM from LDD intersections
  double schedule_ms = 0;  ///< the schedule of the kind (tables, or the optimal scheduler)
  double descriptors_ms = 0;  ///< pack / unpack descriptors and every process's steps
  double total_ms() const noexcept { return com_ms + schedule_ms + descriptors_ms; }  ///< the three together
};

namespace detail {
struct PlanData;
}

class RedistributionPlan;

/// One process's staging memory for a plan: the packed messages it sends and
/// those it receives, in a run through buffers (a compiled run on one node
/// copies straight between the local arrays and needs none). run() without it
/// uses the staging the plan keeps for each process, made on the process's
/// first run through buffers, on its core; a caller may pass its own to choose
/// where and when it is made.
class RedistributionBuffers {
 public:
  /// Staging for `process` of `plan`, allocated here (on the calling thread's
  /// core). Throws InvalidArgument if process is not one of the plan's.
  RedistributionBuffers(const RedistributionPlan& plan, Rank process);

 private:
  friend class RedistributionPlan;
  const detail::PlanData* plan_;
  Rank process_;
  std::unique_ptr<double[]> send_, recv_;  ///< not zero-filled: every element is written before it is read
};

/// Everything about one redistribution that does not depend on the data (see
/// the file's description): made once, run as often as needed.
class RedistributionPlan {
 public:
  /// Throws InvalidArgument if the layouts are of arrays of different shapes,
  /// TableNotApplicable for ScheduleKind::table where the paper's method does
  /// not apply.
  /// `execution`: how the exchange runs (see above).
  RedistributionPlan(Layout source, Layout target, ScheduleKind kind,
                     schedulers::ExchangeExecution execution = schedulers::ExchangeExecution::compiled);
  ~RedistributionPlan();
  /// Takes the plan over; the moved-from one may only be destroyed or assigned to.
  RedistributionPlan(RedistributionPlan&&) noexcept;
  /// Takes the plan over; the moved-from one may only be destroyed or assigned to.
  RedistributionPlan& operator=(RedistributionPlan&&) noexcept;

  const Layout& source() const noexcept;  ///< the layout the array starts in
  const Layout& target() const noexcept;  ///< the layout it ends in
  ScheduleKind kind() const noexcept;  ///< as asked for
  schedulers::ExchangeExecution execution() const noexcept;  ///< as asked for
  /// max(P, P'): the job of an execution has at least this many processes.
  Rank processes() const noexcept;
  const CommTable& com() const noexcept;  ///< COM in elements, P x P'
  /// The sending table CS (P x steps) and the schedule in bytes, as executed.
  const SchedulingTable& cs() const noexcept;
  const schedulers::Schedule& schedule() const noexcept;  ///< see cs()
  std::uint32_t steps() const noexcept;  ///< of the schedule: cs()'s columns
  /// No target receives from two sources in one step.
  bool contention_free() const noexcept;
  /// How the schedule was made ("Algorithm 1, b = 3 b' (K = 3, K' = 3)", ...).
  const std::string& method() const noexcept;
  const PlanTimings& timings() const noexcept;  ///< of the plan's construction

  /// comm.rank()'s part, on a communicator of at least processes() members
  /// (the others return at once): local_in is its block under the source
  /// layout (empty if it is not a source), local_out receives its block under
  /// the target layout. Throws InvalidArgument, before sending anything, if a
  /// size does not match. It works on comm.library(kRedistributionLibrary):
  /// whatever tags the caller's own messages use, they are never in its way.
  /// Once a process has run the plan, a run allocates nothing: the compiled
  /// copies and the staging memory stay with the plan.
  Task<void> run(const Communicator& comm, std::span<const double> local_in, std::span<double> local_out) const;
  /// The same with staging memory made beforehand, for this plan and this
  /// process (InvalidArgument otherwise).
  Task<void> run(const Communicator& comm, std::span<const double> local_in, std::span<double> local_out,
                 RedistributionBuffers& buffers) const;

  /// One execution as a job of processes() processes on `rt`: local_in[i] is
  /// source i's block (P of them), local_out[j] target j's (P' of them).
  /// Returns the time in ms from the first process leaving a barrier after
  /// its set-up to the last one done. Reuses the plan's staging across calls.
  double execute(Runtime& rt, std::span<const std::span<const double>> local_in,
                 std::span<const std::span<double>> local_out, RunOptions options = {}) const;

 private:
  friend class RedistributionBuffers;
  std::unique_ptr<detail::PlanData> data_;
};

/// Builds a plan and executes it once. The Runtime runs the job; see
/// RedistributionPlan::execute for the arrays.
void redistribute(Runtime& rt, const Layout& source, const Layout& target,
                  std::span<const std::span<const double>> local_in, std::span<const std::span<double>> local_out,
                  ScheduleKind kind = ScheduleKind::table);

}  // namespace switchyard::schedulers::redistribution
