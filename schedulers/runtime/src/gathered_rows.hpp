#pragma once
// Generate_Recv by concatenation's gathering of every member's sending vector,
// shared with ExchangePlan::create, which gathers the whole matrix that way.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

// What a member learns from the gathered rows.
struct GatheredRows {
  std::vector<MatrixEntry> column;  // its column: sources and sizes, sorted by source
  std::optional<CommMatrix> matrix;  // the whole matrix, on rank 0 if asked for
};

// Checks `sendl` (InvalidArgument naming `who`: a destination outside comm,
// an empty message, an unsorted row), then concatenates every member's row
// per core (Communicator::allgather_split): each core holds one copy of the
// rows and hands each of its members only its column, and rank 0 the whole
// matrix if `matrix_to_rank0`. O(n + entries) per core, O(column) per member.
Task<GatheredRows> gather_rows(Communicator comm, std::span<const MatrixEntry> sendl, const char* who,
                               bool matrix_to_rank0);

}  // namespace switchyard::schedulers::detail
