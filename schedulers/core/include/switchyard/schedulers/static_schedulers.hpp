#pragma once
/// @file
/// The static schedulers of the papers: each turns a communication matrix into a
/// Schedule of contention-free phases, computed once and executable many times.

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/schedule.hpp"

namespace switchyard::schedulers {

/// LP (Ranka-Wang-Fox Fig. 3): phase k pairs i with i XOR k. For n a power of
/// two: n - 1 phases, empty ones included. Other n: see the implementation note.
Schedule schedule_lp(const CommMatrix& m);

/// GM (Fig. 4): repeated masking passes over the full rows of COM from a random start row.
/// Literal: a dense n x n COM, O(n^2) time per phase and 4 n^2 bytes.
Schedule schedule_gm(const CommMatrix& m, std::uint64_t seed);

/// CGM (Figs. 5 and 6): COM compacted to CCOM (n x d, rows randomly permuted),
/// then masking passes over CCOM with the compaction swap. `parallel` builds
/// CCOM with oneTBB, one row per task.
Schedule schedule_cgm(const CommMatrix& m, std::uint64_t seed, bool parallel = true);

/// RS_N (Wang-Lin-Ranka Fig. 4) and RS_NH (its heap variant with a per-phase
/// cutoff size, which splits messages larger than the cutoff).
Schedule schedule_rsn(const CommMatrix& m, std::uint64_t seed);
/// RS_NH: see schedule_rsn.
Schedule schedule_rsnh(const CommMatrix& m, std::uint64_t seed);

/// What a scheduler may be told beyond the matrix; each uses what applies to it.
struct ScheduleOptions {
  std::uint64_t seed = 1;  ///< the randomised schedulers (GM, CGM, RS_N, RS_NH)
  std::uint64_t max_phases = 0;  ///< optimal-bytes: a cap on its phases (0: none), see optimal.hpp
};

/// By name: "lp", "gm", "cgm", "rsn", "rsnh", and "optimal", "optimal-bytes"
/// (optimal.hpp). Throws InvalidArgument for any other name.
Schedule make_schedule(const std::string& name, const CommMatrix& m, const ScheduleOptions& options);
/// The same with only a seed (no phase cap).
Schedule make_schedule(const std::string& name, const CommMatrix& m, std::uint64_t seed);
/// The names make_schedule accepts, in the scheduler table's order.
const std::vector<std::string>& static_scheduler_names();

/// What the work models below need of a matrix: known before a generated matrix
/// is built (Fig. 7: n, n·d messages, Δ = d, self-messages when d > 0).
struct MatrixShape {
  std::uint64_t processes = 0,  ///< n
      messages = 0,  ///< non-zero entries
      max_degree = 0,  ///< Δ, CommMatrix::max_degree()
      largest_message = 0;  ///< bytes of the largest entry
  bool self_messages = false;  ///< whether some process sends to itself (a diagonal entry)
  static MatrixShape of(const CommMatrix& m);  ///< the shape of a matrix already built
};

/// The elementary steps (a row visited, an entry scanned, a bit of a table
/// cleared, an edge of an alternating path followed) that scheduler `name` may
/// take on a matrix of this shape: the bound of its loops, not a prediction.
/// A step's cost differs by about three orders of magnitude between
/// schedulers (optimal-bytes the most; docs/benchmarks.md, "Figures behind
/// the schedulers' comments"), so callers refuse work beyond a limit the user
/// can raise, rather than run for hours.
/// Throws InvalidArgument for an unknown name.
double schedule_work(const std::string& name, const MatrixShape& shape);
/// The working memory of scheduler `name` beyond a few words per message and
/// per process: LP's busy table of n·(n − 1) bits when there are self-messages,
/// optimal-bytes' two n x n tables of bytes left on a matrix at least 1/8 full.
double schedule_table_bytes(const std::string& name, const MatrixShape& shape);

}  // namespace switchyard::schedulers
