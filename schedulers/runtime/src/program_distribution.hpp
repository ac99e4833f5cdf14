#pragma once
// A phased plan from create(): rank 0 schedules the gathered matrix and sends
// each member its program.

#include "exchange_plan_data.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

// Every member's sends (d.parts.front()) gathered, its column and its program
// (from rank 0) set in its part, with the steps of its compiled run.
Task<void> gather_and_distribute(Communicator comm, ExchangePlanData& d);

}  // namespace switchyard::schedulers::detail
