#pragma once
// The preemptive open-shop schedule behind `optimal-bytes`: phases whose
// makespan (sum over phases of the largest piece) is exactly the byte lower
// bound L = the most bytes any process sends or receives.

#include <cstdint>
#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/schedule.hpp"

namespace switchyard::schedulers::detail {

// Gonzalez and Sahni's preemptive open shop, without their padding to a
// regular matrix, phase by phase in time T = the time still to spend (L at the
// start). A line's slack is T minus its remaining bytes; a line without slack
// is tight and must send in every phase. A phase of length v is allowed when
// every matched message has at least v bytes left (it sends v) and every idle
// line has at least v of slack (it waits v), so tight lines stay tight and no
// load ever exceeds the time left. Each phase takes the matching whose
// allowed length is (nearly) the largest, the bottleneck matching of the
// Birkhoff-von Neumann decomposition, which cuts messages into the fewest
// pieces and phases, kept across phases and repaired incrementally:
// - while the matching allows v: release the matched messages of exactly v
//   bytes and cover every line with slack <= v by messages of more than v
//   bytes, through alternating paths that end at an idle vertex or by
//   dropping a line with slack > v; v only grows, and a step whose search
//   gives up is undone. Without a budget this is the exact bottleneck (a
//   failed search proves by Berge that no matching allows more); each search
//   gets a budget of messages looked at (32 m/n + 64, at most 8192), except
//   those covering a tight line, which must and can succeed while no load
//   exceeds T;
// - then the lines released since the last phase take idle partners with at
//   least v bytes left where one is at hand (no shorter phase, more bytes moved).
// Every phase ends a message or makes a line tight, so there are at most
// nnz + 2n phases; a phase costs its pieces plus a bounded search per line it
// touches.
std::vector<Phase> open_shop_phases(const CommMatrix& m);

// The bytes of the grid the open shop keeps on a matrix of n processes and
// this many messages: two n x n tables of bytes left when at least 1/8 of the
// entries are messages (at most 128 bytes a message), none otherwise.
std::uint64_t open_shop_grid_bytes(std::uint64_t n, std::uint64_t messages);

}  // namespace switchyard::schedulers::detail
