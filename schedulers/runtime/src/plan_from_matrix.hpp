#pragma once
// A plan made from the whole pattern: every process's part, on every member.

#include <memory>

#include "exchange_plan_data.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/schedulers/schedule.hpp"

namespace switchyard::schedulers::detail {

// ExchangePlan(m, options): "auto" chosen for m (its time counted in the
// schedule's), a phased scheme's schedule made and validated.
std::unique_ptr<ExchangePlanData> plan_from_matrix(const CommMatrix& m, ExchangePlanOptions options);

// ExchangePlan::from_schedule: `schedule`, checked against m, with contention allowed.
std::unique_ptr<ExchangePlanData> plan_from_schedule(const CommMatrix& m, Schedule schedule,
                                                     ExchangePlanOptions options);

}  // namespace switchyard::schedulers::detail
