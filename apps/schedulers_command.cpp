#include "schedulers_command.hpp"

#include <cstdio>
#include <string>
#include <switchyard/schedulers/auto_scheduler.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <switchyard/schedulers/scheduler_table.hpp>
#include <vector>

#include "cli_support.hpp"
#include "option_parsers.hpp"

namespace switchyard::cli {

namespace sys = switchyard::schedulers;
namespace rd = switchyard::redistribution;

namespace {

// What exchange reports for a scheduler beside its times: the phases of a
// static schedule, or the busy-lock inquiries of the processes that make
// their plan in every run (DRS_N's; see the exchange driver's global_plan).
const char* reports(const sys::SchedulerDescriptor& d) {
  if (d.kind == sys::SchedulerKind::static_phases) return "phases";
  return d.traits.plan_per_run ? "inquiries" : "-";
}

int run_command() {
  std::printf("switchyard schedulers: the exchange schedulers, in the order of exchange's default --schedulers\n\n");
  constexpr int kName = 15, kKind = 8, kAuto = 6;
  std::printf("%-*s%-*s%-*s%s\n", kName, "name", kKind, "kind", kAuto, "auto", "reports");
  for (const sys::SchedulerDescriptor& d : sys::scheduler_table()) {
    const std::string name(d.name);
    std::printf("%-*s%-*s%-*s%s\n", kName, name.c_str(), kKind,
                d.kind == sys::SchedulerKind::static_phases ? "static" : "online", kAuto,
                d.traits.auto_candidate ? "yes" : "no", reports(d));
  }
  std::printf("%-*sonly when named: per message size, the one of %s that the C3 cost model predicts fastest\n\n", kName,
              sys::kAutoScheduler, join(sys::auto_scheduler_candidates()).c_str());
  std::printf(
      "static: a schedule of contention-free phases made before the exchange (schedule, phases --scheduler)\n"
      "online: no schedule; the processes decide as they run\n\n");
  std::vector<std::string> kinds;
  for (const rd::ScheduleKind k : rd::all_schedule_kinds()) kinds.emplace_back(rd::name(k));
  std::printf("redistribution schedules, in the order of redistribute --schedule all: %s\n", join(kinds).c_str());
  return kExitOk;
}

}  // namespace

SchedulersCommand::SchedulersCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "schedulers",
      "List the exchange schedulers (kind, auto's candidates, what each reports) and the redistribution schedules");
}

int SchedulersCommand::run() const { return run_command(); }

}  // namespace switchyard::cli
