#include "plan_from_matrix.hpp"

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "copy_steps.hpp"
#include "plan_keys.hpp"
#include "plan_scheduler.hpp"
#include "switchyard/schedulers/executor.hpp"

namespace switchyard::schedulers::detail {

namespace {

using Clock = std::chrono::steady_clock;

// A plan from the whole pattern: its node's own keys (local_compiled_key()).
void set_local_keys(ExchangePlanData& d) {
  d.compiled_key = local_compiled_key();
  d.described = std::make_unique<detail::DescribedMemory>(d.processes, local_compiled_key());
}

// Every process's row and column of m, and the steps of its whole messages
// (an online scheme's compiled run).
void set_entries(ExchangePlanData& d, const CommMatrix& m) {
  const std::vector<std::vector<std::uint32_t>> position = detail::column_positions(m);
  std::vector<std::vector<std::uint32_t>> at_sender(m.size());  // per column entry: its row entry at the sender
  for (Rank i = 0; i < m.size(); ++i) {
    d.parts[i].rank = i;
    d.parts[i].sends.assign(m.row(i).begin(), m.row(i).end());
    for (std::size_t k = 0; k < m.row(i).size(); ++k) {
      const MatrixEntry& e = m.row(i)[k];
      d.parts[e.peer].receives.push_back({i, e.bytes});
      at_sender[e.peer].push_back(static_cast<std::uint32_t>(k));
    }
  }
  if (d.scheme == Scheme::phased) return;  // set_programs() sets them, piece by piece
  for (Rank r = 0; r < m.size(); ++r) {
    ExchangePart& part = d.parts[r];
    part.set_steps(detail::steps_of_entries(r, part.sends, part.receives, position[r], at_sender[r]));
  }
}

void set_programs(ExchangePlanData& d, const CommMatrix& m, Schedule s, Contention contention) {
  std::vector<ProcessPlan> plans = make_process_plans(s, m, contention);
  for (Rank r = 0; r < m.size(); ++r) {
    d.parts[r].program = std::move(plans[r]);
    d.parts[r].set_steps(detail::steps_of_program(r, d.parts[r].program));
  }
  d.phases = s.phases.size();
  d.schedule = std::move(s);
}

}  // namespace

std::unique_ptr<ExchangePlanData> plan_from_matrix(const CommMatrix& m, ExchangePlanOptions options) {
  const auto t0 = Clock::now();
  options = resolve_auto(m, std::move(options));
  const double choosing_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::unique_ptr<ExchangePlanData> data = new_plan_data(options, scheme_of(options.scheduler), m.size(), m.size());
  ExchangePlanData& d = *data;
  set_local_keys(d);
  set_entries(d, m);
  if (d.scheme == Scheme::phased) set_programs(d, m, timed_schedule(d, m), Contention::forbidden);
  if (d.options.chosen_by_auto) d.schedule_ms += choosing_ms;
  set_compiled_options(d);
  return data;
}

std::unique_ptr<ExchangePlanData> plan_from_schedule(const CommMatrix& m, Schedule schedule,
                                                     ExchangePlanOptions options) {
  validate(schedule, m, Contention::allowed);
  options.scheduler = schedule.scheduler;
  auto data = new_plan_data(std::move(options), Scheme::phased, m.size(), m.size());
  set_local_keys(*data);
  set_entries(*data, m);
  set_programs(*data, m, std::move(schedule), Contention::allowed);
  set_compiled_options(*data);
  return data;
}

}  // namespace switchyard::schedulers::detail
