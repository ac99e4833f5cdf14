#pragma once
// DRS_N's order of a sender's pending messages (Wang, Lin and Ranka): random,
// drawn afresh for every run. One shuffle for both of its executions: on
// messages (execute_drsn) and compiled, where the runtime copies each message
// under its receiver's busy lock (CopyOrder::receiver_locks) in the order
// drsn_step_order gives it.

#include <cstdint>
#include <span>

#include "switchyard/communicator.hpp"

namespace switchyard::schedulers::detail {

// Shuffles `pending` with the stream of (`stream`, `sender`).
void shuffle_pending(std::uint64_t stream, Rank sender, std::span<std::uint32_t> pending) noexcept;

// The compiled DRS_N's LockedStepOrder: a stream per (seed, run), shuffled per sender.
void drsn_step_order(std::uint64_t seed, std::uint64_t run, Rank sender, std::span<std::uint32_t> steps) noexcept;

}  // namespace switchyard::schedulers::detail
