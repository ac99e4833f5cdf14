#pragma once
// Which scheduler and scheme a plan takes, and its timed schedule.

#include "exchange_plan_data.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/schedulers/schedule.hpp"

namespace switchyard::schedulers::detail {

// options with "auto" replaced by the scheduler it chooses for m.
ExchangePlanOptions resolve_auto(const CommMatrix& m, ExchangePlanOptions options);

// The scheme that runs scheduler `name`: InvalidArgument for an unknown name.
Scheme scheme_of(const SchedulerName& name);

// d.options.scheduler's schedule of m, validated, its time in d.schedule_ms.
Schedule timed_schedule(ExchangePlanData& d, const CommMatrix& m);

}  // namespace switchyard::schedulers::detail
