#pragma once
// A plan's messages as the copies of a compiled run (compiled_exchange.hpp): each
// member's steps as receiver and as sender, with the region (entry index) of
// the message at both ends.

#include <span>
#include <vector>

#include "switchyard/compiled_exchange.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/executor.hpp"

namespace switchyard::schedulers::detail {

struct MemberSteps {
  std::vector<CopyStep> incoming, outgoing;
};

// Each entry of m's rows at its position in its destination's column
// (columns list sources in rank order): column_position(m)[src][k] is where
// row src's k-th message lands.
std::vector<std::vector<std::uint32_t>> column_positions(const CommMatrix& m);

// From a member's slice of a schedule: a step per piece, in phase order.
MemberSteps steps_of_program(Rank me, const ProcessPlan& program);

// From a member's whole messages (an online scheme: one step each, phase 0):
// sends[i] lands at its receiver's entry dst_entry[i]; receives[j] comes from
// its sender's entry src_entry[j].
MemberSteps steps_of_entries(Rank me, std::span<const MatrixEntry> sends, std::span<const MatrixEntry> receives,
                             std::span<const std::uint32_t> dst_entry, std::span<const std::uint32_t> src_entry);

}  // namespace switchyard::schedulers::detail
