#pragma once
/// @file
/// The "auto" exchange scheduler: charges each candidate scheduler's phases for
/// a matrix through the C³ model (switchyard::model) with a machine's
/// parameters, and picks the cheapest.
///
/// What each candidate is in supersteps:
///  - a static scheduler (lp, cgm, optimal, optimal-bytes): one superstep per
///    phase of its schedule, each transfer one message;
///  - ac: every message in one superstep, non-blocking sends;
///  - drsn: every message in one superstep, charged with blocking sends: a
///    sender waits for the receiver's busy lock, the way the paper describes
///    blocking sends as a way of dealing with congestion.
/// Each superstep also pays the machine's set-up once (the phase's start: the
/// loosely synchronous executor's hand-over from one phase to the next).
/// A calibrated machine file also carries measured / predicted ratios of each
/// candidate on calibration matrices (model calibrate), which scale its units,
/// and the fixed time of an exchange per process, which every candidate pays.

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/model/machine_file.hpp"
#include "switchyard/model/superstep.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

/// The name that asks for the cheapest candidate, chosen per matrix (choose_exchange_scheduler).
inline constexpr const char* kAutoScheduler = "auto";

/// The schedulers "auto" chooses among (scheduler_table.hpp's auto_candidate):
/// ac, lp, cgm, optimal, optimal-bytes, drsn.
const std::vector<std::string>& auto_scheduler_candidates();

/// One candidate's predicted cost for a matrix on a machine (predict_exchange).
struct SchedulerPrediction {
  std::string scheduler;  ///< the candidate's name
  double communication = 0;  ///< units, with each superstep's start (one set-up)
  double computation = 0;  ///< units
  double units = 0;  ///< communication + computation
  double correction = 1;  ///< the machine file's measured / predicted for this scheduler, scale and size
  double overhead_ms = 0;  ///< the file's fixed time per process times the processes: alike for every candidate
  double predicted_ms = 0;  ///< units * correction * the machine's unit_ns + overhead_ms
  std::uint64_t supersteps = 0;  ///< charged: the static schedule's non-empty phases, or 1 for ac and drsn
};

/// The supersteps of `scheduler` (a candidate) for m, on a machine of m.size() processes.
model::Algorithm exchange_supersteps(const std::string& scheduler, const CommMatrix& m, const ScheduleOptions& options);

/// m's messages over the machine's cores (at least one): the scale the
/// file's exchange correction is keyed by, when calibrate() measures a table
/// and when predict_exchange() looks one up.
double messages_per_core(const CommMatrix& m, const model::Machine& machine);

/// Every candidate's prediction for m on the machine file's core level (its
/// processes set to m.size()), the cheapest predicted_ms first (ties: in
/// candidate order). The file's exchange correction, if any, scales each
/// candidate's units at m's average message size and messages per core (the
/// machine's cores) and adds its fixed time per process (calibrated and
/// ring-sync variants; the paper's variant is left as published).
std::vector<SchedulerPrediction> predict_exchange(const CommMatrix& m, const model::MachineFile& machine,
                                                  const ScheduleOptions& options = {});

/// The cheapest candidate's name.
std::string choose_exchange_scheduler(const CommMatrix& m, const model::MachineFile& machine,
                                      const ScheduleOptions& options = {});

}  // namespace switchyard::schedulers
