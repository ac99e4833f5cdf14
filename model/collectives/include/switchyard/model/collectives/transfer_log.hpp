#pragma once
// The messages a collective sent, superstep by superstep: what tests compare
// with the model's description of the algorithm. Each process appends only to
// its own row (no sharing between worker threads while a job runs); read the
// log after the job.

#include <cstdint>
#include <tuple>
#include <vector>

#include "switchyard/types.hpp"

namespace switchyard::model::collectives {

/// One message a collective sent.
struct LoggedTransfer {
  std::uint32_t superstep = 0;  ///< the algorithm's superstep it belongs to, from 0
  /// The sender's rank, of the communicator the plan was made on.
  Rank src = 0, dst = 0;  ///< ranks of the communicator the plan was made on
  std::uint64_t bytes = 0;  ///< payload bytes
  /// By superstep, then src, dst and bytes.
  friend auto operator<=>(const LoggedTransfer&, const LoggedTransfer&) = default;
};

/// The messages of the runs of the plans that record_into() it, one row per sending
/// process. Each process appends only to its own row, so no locking; read it after the job.
class TransferLog {
 public:
  explicit TransferLog(Rank processes) : rows_(processes) {}  ///< one empty row per process of the communicator
  /// Appends to the row of t.src (which must be a rank below processes).
  void add(const LoggedTransfer& t) { rows_.at(t.src).push_back(t); }
  /// Every transfer, sorted by (superstep, src, dst, bytes).
  std::vector<LoggedTransfer> sorted() const;
  void clear() {  ///< empties every row
    for (auto& r : rows_) r.clear();
  }

 private:
  std::vector<std::vector<LoggedTransfer>> rows_;
};

}  // namespace switchyard::model::collectives
