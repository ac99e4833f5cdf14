#pragma once
// Executes a static Schedule on the runtime, loosely synchronously (Ranka-Wang-
// Fox Section 5): no barrier between phases. Each process walks its own slice
// of the schedule; in a phase it posts its receive, posts its send, and waits
// for both, then moves straight on to its next phase, whatever the others do.
// This cannot deadlock: every transfer of phase k is posted by both ends once
// they have finished their phases before k, so by induction on k every phase
// completes.

#include <cstdint>
#include <limits>
#include <vector>

#include "switchyard/process.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/payload.hpp"
#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers {

// One phase of one process: at most one send and one receive, each a byte range
// of one matrix entry, named by its index in the process's row (send) or column
// (receive), i.e. in ExchangeBuffers::row() / column().
struct PlanStep {
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t phase = 0;
  Tag tag = 0;  // phase mod 2^31: the pieces of one message sent in different phases never match the wrong receive
  std::uint32_t send_entry = kNone;
  Rank send_to = 0;
  std::uint64_t send_offset = 0, send_bytes = 0;
  std::uint32_t recv_entry = kNone;
  Rank recv_from = 0;
  std::uint64_t recv_offset = 0, recv_bytes = 0;
};

// A process's slice of a Schedule: its phases in order, without the phases in
// which it neither sends nor receives.
struct ProcessPlan {
  Rank rank = 0;
  std::vector<PlanStep> steps;
};

// Every process's plan, in one pass over the schedule: O(n + transfers log d).
// The schedule must be valid for `m` (validate()); throws InvalidArgument for a
// transfer that is not an entry of `m`.
std::vector<ProcessPlan> make_process_plans(const Schedule& s, const CommMatrix& m);

// Runs process p's plan with its buffers. Throws InvalidArgument if the plan or
// the buffers belong to another rank, or a message arrives with the wrong size.
Task<void> execute(Process& p, const ProcessPlan& plan, ExchangeBuffers& buffers);

}  // namespace switchyard::schedulers
