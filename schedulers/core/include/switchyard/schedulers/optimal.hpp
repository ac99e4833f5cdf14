#pragma once
/// @file
/// Schedules that cannot be improved, beyond the papers' heuristics.
///
/// `optimal`: exactly Δ phases, Δ the most messages any process sends or
/// receives. The matrix is a bipartite multigraph-free graph (senders on one
/// side, receivers on the other), a phase is a matching, and König's theorem
/// says Δ matchings always suffice: the schedule is a proper Δ-edge-colouring.
///
/// `optimal-bytes`: messages may be split into byte ranges. The makespan (sum
/// over phases of the largest transfer in the phase) reaches the lower bound
/// L = the most bytes any process sends or receives, by Gonzalez and Sahni's
/// preemptive open-shop schedule (lines with slack may idle, the tight ones
/// never do), each phase the matching that allows the longest phase, so that
/// messages are cut into few pieces.

#include <cstdint>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/schedule.hpp"

namespace switchyard::schedulers {

/// Exactly m.max_degree() phases, whole messages only. Deterministic.
Schedule schedule_optimal(const CommMatrix& m);

/// What schedule_optimal_bytes may be told beyond the matrix.
struct OptimalBytesOptions {
  /// 0: no cap, the makespan equals m.max_load_bytes() exactly. Otherwise at
  /// most max(max_phases, Δ) phases, trading makespan for fewer phase start-ups.
  std::uint64_t max_phases = 0;
};

/// Makespan == m.max_load_bytes() when uncapped.
Schedule schedule_optimal_bytes(const CommMatrix& m, const OptimalBytesOptions& options = {});

}  // namespace switchyard::schedulers
