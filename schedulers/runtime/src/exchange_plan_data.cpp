#include "exchange_plan_data.hpp"

#include <utility>

#include "drsn_order.hpp"

namespace switchyard::schedulers::detail {

std::unique_ptr<ExchangePlanData> new_plan_data(ExchangePlanOptions options, Scheme scheme, Rank processes,
                                                std::size_t parts) {
  auto d = std::make_unique<ExchangePlanData>();
  d->scheme = scheme;
  d->options = options;
  if (options.machine) {  // the plan's own copy: the caller's may go
    d->machine = *options.machine;
    d->options.machine = &*d->machine;
  }
  d->processes = processes;
  d->parts.resize(parts);
  d->run_counts = std::make_unique<MadeOnUse<RunCount>>(parts);
  d->scratch = std::make_unique<MadeOnUse<RegionScratch>>(parts);
  d->split = std::make_unique<MadeOnUse<SplitRun>>(parts);
  return d;
}

void set_compiled_options(ExchangePlanData& d) {
  CompiledExchangeOptions& o = d.compiled_options;
  o.side = d.options.copy_side;
  o.seed = d.options.seed;
  switch (d.scheme) {
    case Scheme::ac:
      o.order = CopyOrder::any;
      break;
    case Scheme::phased:
      o.order = d.options.strict ? CopyOrder::strict_phases : CopyOrder::phases;
      break;
    case Scheme::drsn:
      o.order = CopyOrder::receiver_locks;  // the mechanism; DRS_N's random order is the policy
      o.step_order = &drsn_step_order;
      o.side = CopySide::sender;
      o.retry_yields = d.options.drsn_retry_yields;
      o.observer = d.options.drsn_monitor;
      break;
  }
  o.phases = static_cast<std::uint32_t>(d.phases);
  o.programs = d.compiled_programs.get();
  d.described_compiled_options = o;
  d.described_compiled_options.programs = d.described_programs.get();
}

}  // namespace switchyard::schedulers::detail
