#pragma once
/// @file
/// BarrierCall: what Process::barrier() and Communicator::barrier() return, to
/// co_await at once. On one node a process's arrival is a count on its core,
/// with no coroutine frame: every process of the core but the last to arrive
/// parks on the core's call, and the last one meets the other cores (one word
/// each, Group::reached) and releases its core. The core's processes are
/// resumed once each, as a yield resumes them. Across nodes, or while the job
/// records a trace, the call becomes the collective's Task where it is awaited.

#include <coroutine>
#include <cstdint>

#include "switchyard/message.hpp"
#include "switchyard/task.hpp"
#include "switchyard/types.hpp"

namespace switchyard {

class Process;

namespace detail {
class Group;
struct CoreCollective;
}  // namespace detail

/// One barrier call of one process (see the file's description). Awaited
/// once, in the process that made it; moved, never copied.
class [[nodiscard]] BarrierCall {
 public:
  /// Moves a call that has not been awaited.
  BarrierCall(BarrierCall&&) noexcept = default;
  /// Moves a call that has not been awaited.
  BarrierCall& operator=(BarrierCall&&) noexcept = default;

  /// Arrives at the call on this process's core; true where the call is
  /// complete already (the last of its core, every other core there before it).
  bool await_ready();
  /// Parks the process until its core's call is complete, or, for the last
  /// of its core, runs its wait for the other cores; the coroutine to run next.
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter);
  /// Every member has reached the barrier. Rethrows what failed the call.
  void await_resume();
  /// The call as a Task (a coroutine frame around it), for a caller that keeps Tasks.
  operator Task<void>() &&;  // NOLINT(google-explicit-constructor): where callers keep Tasks

 private:
  friend class Process;
  friend class Communicator;
  enum class Step : std::uint8_t { task, arrive, parked, last, complete };
  /// Member `me` of the communicator of group `g`, on process `p`: made
  /// inline, so that a barrier's call costs its stores and no call. The group
  /// outlives the call (a Communicator that made it may be a temporary).
  BarrierCall(Process& p, const detail::Group& g, Rank me) noexcept : process_(&p), group_(&g), me_(me) {}
  /// The first arrival of its core at the call: opens its core's slot, then arrives.
  [[gnu::noinline]] bool first_of_core();
  /// Arrives at the call on its core: parks (false) or, the last, completes it if it can.
  bool arrive_at_core();
  /// The last arrival of its core: rings the other cores and completes the
  /// call here if they are all there (true); out of line, so that the other
  /// arrivals' path saves no registers for it.
  [[gnu::noinline]] bool last_of_core();
  /// The last arrival of its core, some other core not there yet: waits for
  /// them in a task (out of line: the parked path saves no registers for it).
  [[gnu::noinline]] std::coroutine_handle<> wait_for_other_cores(std::coroutine_handle<> awaiter);
  /// await_resume() where the call went on in a task (Step::task, Step::last):
  /// its outcome, and for the last arrival its core's release.
  [[gnu::noinline]] void resume_from_task();
  /// Across nodes, or while the job records a trace: becomes the collective's Task, and awaits it.
  [[gnu::cold, gnu::noinline]] bool await_as_task();

  Process* process_ = nullptr;
  const detail::Group* group_ = nullptr;
  Rank me_ = 0;
  Step step_ = Step::arrive;
  detail::CoreCollective* slot_ = nullptr;  ///< once arrived: its core's state of the call
  std::uint64_t seq_ = 0;  ///< once arrived: the call's number on the communicator
  Task<void> task_;  ///< Step::task, and the last arrival's wait for the other cores
};

}  // namespace switchyard
