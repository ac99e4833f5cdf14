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

struct LoggedTransfer {
  std::uint32_t superstep = 0;
  Rank src = 0, dst = 0;  // ranks of the communicator the plan was made on
  std::uint64_t bytes = 0;
  friend auto operator<=>(const LoggedTransfer&, const LoggedTransfer&) = default;
};

class TransferLog {
 public:
  explicit TransferLog(Rank processes) : rows_(processes) {}
  void add(const LoggedTransfer& t) { rows_.at(t.src).push_back(t); }
  // Every transfer, sorted by (superstep, src, dst, bytes).
  std::vector<LoggedTransfer> sorted() const;
  void clear() {
    for (auto& r : rows_) r.clear();
  }

 private:
  std::vector<std::vector<LoggedTransfer>> rows_;
};

}  // namespace switchyard::model::collectives
