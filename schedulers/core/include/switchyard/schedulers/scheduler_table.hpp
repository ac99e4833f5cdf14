#pragma once
// Every exchange scheduler, once: its name, its kind, how its schedule is
// made, and what the rest of the library needs to know about it. The name
// lists (static_scheduler_names(), online_scheduler_names(), the default
// --schedulers list, auto's candidates) and the dispatch by name (make_schedule,
// ExchangePlan, the exchange driver, the CLI) all read this table.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

enum class SchedulerKind {
  static_phases,  // a Schedule of contention-free phases, made before the exchange and run many times
  online,         // no schedule: the processes decide as they run (online.hpp)
};

// Which online scheme runs an online scheduler (none for a static one).
enum class OnlineScheme { none, ac, drsn };

struct SchedulerTraits {
  bool auto_candidate = false;    // "auto" charges it through the C³ model
  bool blocking_sends = false;    // the model charges its sends as blocking (DRS_N's busy locks)
  bool plan_per_run = false;      // its processes make their plan in every run (Generate_Recv first)
};

struct SchedulerDescriptor {
  std::string_view name;
  SchedulerKind kind;
  // static_phases: makes the schedule of a matrix; null for online schedulers.
  Schedule (*make)(const CommMatrix& m, const ScheduleOptions& options);
  OnlineScheme online;
  SchedulerTraits traits;
  // static_phases: the steps make may take on a matrix of this shape (the
  // bound of its loops; see schedule_work); null for online schedulers.
  double (*work)(const MatrixShape& shape) = nullptr;
};

// The table, in the order of the default exchange list: ac, the static
// schedulers (lp, gm, cgm, rsn, rsnh, optimal, optimal-bytes), drsn.
std::span<const SchedulerDescriptor> scheduler_table();
// The descriptor of `name`, or null if no scheduler has that name.
const SchedulerDescriptor* find_scheduler(std::string_view name);

// "ac", "drsn".
const std::vector<std::string>& online_scheduler_names();
// Every name of the table, in its order.
std::vector<std::string> default_exchange_schedulers();
// A name of the table, or "auto".
bool is_exchange_scheduler(const std::string& name);

}  // namespace switchyard::schedulers
