#pragma once
// What every algorithm's plan is to CollectivePlan: state built once by a
// collective factory (sub-communicators, staging buffers) and a run.

#include <cstdint>
#include <memory>
#include <string_view>

#include "switchyard/model/collectives/collective_plan.hpp"

namespace switchyard::model::collectives::detail {

class AlgorithmState {
 public:
  virtual ~AlgorithmState() = default;
  // Buffers already checked against the plan's sizes.
  virtual Task<void> run(Buffers buffers, TransferLog* log) = 0;
};

// The 2-level algorithms' grid of p processes: R x C, R the largest divisor of
// p not above sqrt(p) (all_to_all_algorithms.cpp).
struct Grid {
  Rank rows, cols;
};
Grid grid_of(Rank p);

// Each factory is collective over comm. `bytes` is L. The tree algorithms
// include one-to-all's 1-lev-our-br; `root` is the rank of comm that scatters
// (gathers).
Task<std::unique_ptr<AlgorithmState>> make_tree_algorithm(Communicator comm, Operation op, std::string_view algorithm,
                                                          std::uint64_t bytes, Rank root);
Task<std::unique_ptr<AlgorithmState>> make_all_to_all(Communicator comm, std::string_view algorithm,
                                                      std::uint64_t bytes);

}  // namespace switchyard::model::collectives::detail
