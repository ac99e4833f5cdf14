#pragma once
/// @file
/// Every exchange scheduler, once: its name, its kind, how its schedule is
/// made, and what the rest of the library needs to know about it. The name
/// lists (static_scheduler_names(), online_scheduler_names(), the default
/// --schedulers list, auto's candidates) and the dispatch by name (make_schedule,
/// ExchangePlan, the exchange driver, the CLI) all read this table.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

/// Whether a scheduler makes a schedule before the exchange or decides during it.
enum class SchedulerKind {
  static_phases,  ///< a Schedule of contention-free phases, made before the exchange and run many times
  online,  ///< no schedule: the processes decide as they run (online.hpp)
};

/// Which online scheme runs an online scheduler (none for a static one).
enum class OnlineScheme {
  none,  ///< a static scheduler
  ac,  ///< execute_ac (online.hpp)
  drsn  ///< execute_drsn after Generate_Recv (online.hpp)
};

/// What the model, the plans and the driver need to know of a scheduler beyond its kind.
struct SchedulerTraits {
  bool auto_candidate = false;  ///< "auto" charges it through the C³ model
  bool blocking_sends = false;  ///< the model charges its sends as blocking (DRS_N's busy locks)
  bool plan_per_run = false;  ///< its processes make their plan in every run (Generate_Recv first)
};

/// One row of the scheduler table.
struct SchedulerDescriptor {
  std::string_view name;  ///< as the CLI and ExchangePlanOptions spell it: "lp", "optimal-bytes", ...
  SchedulerKind kind;  ///< static or online
  /// static_phases: makes the schedule of a matrix; null for online schedulers.
  Schedule (*make)(const CommMatrix& m, const ScheduleOptions& options);
  OnlineScheme online;  ///< online schedulers: which scheme runs them; none for static ones
  SchedulerTraits traits;  ///< what else the library needs to know
  /// static_phases: the steps make may take on a matrix of this shape (the
  /// bound of its loops; see schedule_work); null for online schedulers.
  double (*work)(const MatrixShape& shape) = nullptr;
};

/// The table, in the order of the default exchange list: ac, the static
/// schedulers (lp, gm, cgm, rsn, rsnh, optimal, optimal-bytes), drsn.
std::span<const SchedulerDescriptor> scheduler_table();
/// The descriptor of `name`, or null if no scheduler has that name.
const SchedulerDescriptor* find_scheduler(std::string_view name);

/// "ac", "drsn".
const std::vector<std::string>& online_scheduler_names();
/// Every name of the table, in its order.
std::vector<std::string> default_exchange_schedulers();
/// A name of the table, or "auto".
bool is_exchange_scheduler(const std::string& name);

}  // namespace switchyard::schedulers
