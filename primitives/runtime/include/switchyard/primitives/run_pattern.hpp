#pragma once
// Runs any communication pattern (task_hierarchy.hpp) through the task
// classify() picks for it: a program states what it sends to whom, and the
// library executes it with the least expensive prototype task.
//
//   Pattern p = ...;                       // the same on every member
//   Classification how = co_await primitives::run(comm, p, buffers, &combiner);
//
// Buffers of this member: `send` holds one packet per destination of
// p.sends[rank].to, in that order (one packet, if same_packet), each p.bytes
// long; `recv` one buffer per source that sends to this member, sources in
// rank order (one buffer for the combined packet, if p.combinable and someone
// sends to it). A combinable pattern needs `combine`.
//
// This is the generic path: it packs the packets into the task's buffers
// (dummy packets where the task's instance sends more than the pattern needs)
// and unpacks what this member needs, allocating scratch per call. A program
// that repeats one task calls it directly.

#include <span>

#include "switchyard/communicator.hpp"
#include "switchyard/primitives/accumulate.hpp"
#include "switchyard/primitives/call_options.hpp"
#include "switchyard/primitives/task_hierarchy.hpp"
#include "switchyard/task.hpp"

namespace switchyard::primitives {

/// This member's buffers for run() (see the file's description).
struct PatternBuffers {
  std::span<const std::span<const std::byte>> send;  ///< one packet per destination, in the order of p.sends[rank].to
  /// One buffer per source, in rank order (one for the combined packet, if combinable).
  std::span<const std::span<std::byte>> recv;
};

/// Collective over comm (comm.size() == p.processes). Returns the classification it ran.
Task<Classification> run(Communicator comm, const Pattern& p, PatternBuffers buffers, const Combiner* combine = nullptr,
                         CallOptions options = {});

}  // namespace switchyard::primitives
