#pragma once
// ExchangePlan::create: a member's part of a plan made together, each member
// passing its own sends.

#include <memory>
#include <span>

#include "exchange_plan_data.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

// Collective over comm (see ExchangePlan::create): the options agreed, "auto"
// chosen together, the member's column learnt, its program or peer entries,
// the plan's key agreed, and a compiled plan's exchange prepared.
Task<std::unique_ptr<ExchangePlanData>> create_plan(Communicator comm, std::span<const MatrixEntry> sends,
                                                    ExchangePlanOptions options);

}  // namespace switchyard::schedulers::detail
