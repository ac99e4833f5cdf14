#pragma once
// The preemptive open-shop schedule behind `optimal-bytes`: phases whose
// makespan (sum over phases of the largest piece) is exactly the byte lower
// bound L = the most bytes any process sends or receives.

#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/schedule.hpp"

namespace switchyard::schedulers::detail {

// Gonzalez and Sahni's preemptive open shop, without their padding to a
// regular matrix, phase by phase in time T = the time still to spend (L at the
// start). A line (row or column) is tight when its remaining bytes equal T; T
// never drops below any line's load, so tight lines stay tight and must send in
// every phase. Each phase:
// - keeps a matching covering every tight line (one always exists while no
//   load exceeds T, by the regular-padding argument), repaired incrementally:
//   only lines whose message finished, or a tight line left uncovered, search
//   for an augmenting path, the latter allowed to end by dropping a non-tight
//   line of its own side;
// - lasts δ = the longest that keeps every line's load <= T - δ when each
//   matched message sends min(δ, its remaining bytes), and that spends at most
//   1/k of a line's slack (T - load) on the idle tail of a message that
//   finishes early, k the messages the line has left, so lines stay off the
//   tight set as long as possible instead of fragmenting like a
//   Birkhoff-von Neumann decomposition;
// - is the one phase's pieces, each starting where its message's last piece
//   ended.
// Every phase ends a message or makes a line tight, so there are at most
// nnz + 2n phases; a phase costs O(its pieces + repairs), and a degenerate
// shape with one tight line and idle others (a star) costs O(log n) per phase.
std::vector<Phase> open_shop_phases(const CommMatrix& m);

}  // namespace switchyard::schedulers::detail
