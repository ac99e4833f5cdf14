#include "plan_scheduler.hpp"

#include <chrono>
#include <string>

#include "switchyard/errors.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/exchange.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers::detail {

ExchangePlanOptions resolve_auto(const CommMatrix& m, ExchangePlanOptions options) {
  if (options.scheduler != kAutoScheduler) return options;
  const model::MachineFile machine = options.machine ? *options.machine : model::default_machine_file();
  options.scheduler = choose_exchange_scheduler(m, machine, ScheduleOptions{options.seed, options.max_phases});
  options.chosen_by_auto = true;
  return options;
}

Scheme scheme_of(const SchedulerName& name) {
  if (const SchedulerDescriptor* d = find_scheduler(name.str())) {
    switch (d->online) {
      case OnlineScheme::ac:
        return Scheme::ac;
      case OnlineScheme::drsn:
        return Scheme::drsn;
      case OnlineScheme::none:
        return Scheme::phased;
    }
  }
  std::string known;
  for (const auto& k : default_exchange_schedulers()) known += (known.empty() ? "" : ", ") + k;
  throw InvalidArgument("switchyard: ExchangePlan: unknown scheduler '" + name + "' (known: " + known + ", " +
                        std::string(kAutoScheduler) + ")");
}

Schedule timed_schedule(ExchangePlanData& d, const CommMatrix& m) {
  const auto t0 = std::chrono::steady_clock::now();
  Schedule s = make_schedule(d.options.scheduler.str(), m, ScheduleOptions{d.options.seed, d.options.max_phases});
  d.schedule_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  validate(s, m);
  return s;
}

}  // namespace switchyard::schedulers::detail
