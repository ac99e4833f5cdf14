#include "switchyard/schedulers/auto_scheduler.hpp"

#include <algorithm>

#include "switchyard/model/cost.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"

namespace switchyard::schedulers {
namespace {

model::Submachine whole_machine(Rank processes) {
  model::Submachine sub;
  sub.members.resize(processes);
  for (Rank r = 0; r < processes; ++r) sub.members[r] = r;
  sub.shape = model::Shape{1, processes};
  return sub;
}

model::Superstep every_message(const CommMatrix& m) {
  model::Submachine sub = whole_machine(m.size());
  for (Rank i = 0; i < m.size(); ++i)
    for (const MatrixEntry& e : m.row(i)) sub.transfers.push_back({i, e.peer, e.bytes});
  return model::Superstep{"every message", {std::move(sub)}};
}

}  // namespace

model::Algorithm exchange_supersteps(const std::string& scheduler, const CommMatrix& m,
                                     const ScheduleOptions& options) {
  const SchedulerDescriptor* d = find_scheduler(scheduler);
  if (d && d->kind == SchedulerKind::online) return {every_message(m)};
  const Schedule s = make_schedule(scheduler, m, options);
  model::Algorithm out;
  for (const Phase& phase : s.phases) {
    model::Submachine sub = whole_machine(m.size());
    for (const Transfer& t : phase) sub.transfers.push_back({t.src, t.dst, t.bytes});
    if (!sub.transfers.empty()) out.push_back(model::Superstep{"phase", {std::move(sub)}});
  }
  return out;
}

double messages_per_core(const CommMatrix& m, const model::Machine& machine) {
  return static_cast<double>(m.messages()) / static_cast<double>(std::max<std::uint32_t>(machine.cores, 1));
}

std::vector<SchedulerPrediction> predict_exchange(const CommMatrix& m, const model::MachineFile& file,
                                                  const ScheduleOptions& options) {
  model::Machine machine = file.core;
  machine.processes = std::max<Rank>(m.size(), 1);
  const double average = m.messages() ? static_cast<double>(m.total_bytes()) / static_cast<double>(m.messages()) : 0;
  const double per_core = messages_per_core(m, machine);
  const bool corrected = machine.variant != model::ModelVariant::paper;
  std::vector<SchedulerPrediction> out;
  for (const std::string& name : auto_scheduler_candidates()) {
    model::Machine charged = machine;
    if (find_scheduler(name)->traits.blocking_sends) charged.sends = model::SendProtocol::blocking;
    const model::Algorithm steps = exchange_supersteps(name, m, options);
    const model::AlgorithmCost c = model::cost(charged, steps);
    SchedulerPrediction p{name, c.communication + machine.setup * static_cast<double>(steps.size()), c.computation};
    p.units = p.communication + p.computation;
    p.correction = corrected ? file.exchange.at(name, average, per_core) : 1;
    p.overhead_ms = corrected ? file.exchange.overhead_ns_per_process * static_cast<double>(m.size()) * 1e-6 : 0;
    p.predicted_ms = p.units * p.correction * machine.unit_ns * 1e-6 + p.overhead_ms;
    p.supersteps = steps.size();
    out.push_back(std::move(p));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.predicted_ms < b.predicted_ms; });
  return out;
}

std::string choose_exchange_scheduler(const CommMatrix& m, const model::MachineFile& machine,
                                      const ScheduleOptions& options) {
  return predict_exchange(m, machine, options).front().scheduler;
}

}  // namespace switchyard::schedulers
