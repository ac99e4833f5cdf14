#pragma once
// What the members of create() agree on before they make a plan: their
// options, and for "auto" the scheduler rank 0 chooses.

#include <span>

#include "switchyard/communicator.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

// Every member of create() passes the same options, or every member throws,
// naming rank 0's and those of the first member that differs: members that
// part ways (another scheduler takes other collectives) would wait for each
// other until the stall timeout. Two collectives when they agree.
Task<void> agree_options(Communicator lib, const ExchangePlanOptions& options);

// "auto" in create(): every member's rows to every member, rank 0 chooses for
// the whole matrix and sends the others its choice.
Task<ExchangePlanOptions> choose_together(Communicator comm, std::span<const MatrixEntry> sends,
                                          ExchangePlanOptions options);

}  // namespace switchyard::schedulers::detail
