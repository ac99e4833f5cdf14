#pragma once
/// @file
/// Phase counts and scheduling time of a static scheduler over random Fig. 7
/// matrices: the "perm" and "comp" columns of Ranka-Wang-Fox Table 4.

#include <cstdint>
#include <string>

#include "switchyard/progress.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"

namespace switchyard::schedulers {

/// Phases and scheduling time over the samples of phase_statistics().
struct PhaseStatistics {
  double avg = 0;  ///< phases per schedule
  std::uint64_t min = 0,  ///< fewest phases of a sample
      max = 0;  ///< most phases of a sample
  double schedule_ms_avg = 0;  ///< wall time of one scheduling call
};

/// Schedules `samples` Fig. 7 matrices (n processes, d messages per row and
/// column; each sample's matrix and scheduler seeds derive from `seed` and the
/// sample number) with `scheduler` (a static_scheduler_names() entry) and
/// validates each schedule. Only the scheduling call is timed, on the calling
/// thread alone: CGM builds CCOM serially here, as the paper's "comp" column
/// does. `progress`, if given, hears of every sample done. Throws
/// InvalidArgument for an unknown scheduler, samples == 0 or d > n.
PhaseStatistics phase_statistics(const std::string& scheduler, Rank n, Rank d, std::uint32_t samples,
                                 std::uint64_t seed, const Progress& progress = {});

}  // namespace switchyard::schedulers
