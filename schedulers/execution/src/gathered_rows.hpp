#pragma once
// Generate_Recv by concatenation's allgather of every member's sending vector,
// shared with ExchangePlan::create, which gathers the whole matrix that way.

#include <cstddef>
#include <span>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

// Checks `sendl` (InvalidArgument naming `who`: a destination outside comm,
// an empty message, an unsorted row), then allgathers it over comm: every
// member's row, packed, in rank order.
Task<std::vector<std::byte>> allgather_rows(Communicator comm, std::span<const MatrixEntry> sendl, const char* who);
// Member `me`'s column of the gathered rows: sources and sizes, sorted by source.
std::vector<MatrixEntry> column_of(std::span<const std::byte> rows, Rank me);
// The matrix of the gathered rows of n members.
CommMatrix matrix_of(std::span<const std::byte> rows, Rank n);

}  // namespace switchyard::schedulers::detail
