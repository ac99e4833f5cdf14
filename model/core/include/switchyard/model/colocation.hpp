#pragma once
// The "co-located" state of this machine's two cores. At a high host load the
// cross-core figures of a calibration sometimes fall to same-core values for
// whole calibrations, minutes on end (the cross-core one-way time to under a
// third of its normal value, h and w to a quarter or less), while every
// same-core figure stays where it was (the figures: docs/cost-model.md, "The
// host's states").
// Most likely the host then runs the two vCPUs on sibling hardware threads of
// one physical core. It cannot be seen from inside: lscpu, hwloc and
// /sys/devices/system/cpu/cpu*/topology report one thread per core and
// separate cores whatever the host does. It shows only in timings, and the
// most direct one is a hand-off: an 8-byte message between two processes on
// different cores against the same between two processes of one core, timed
// in the same round of a calibration.

#include <cstddef>
#include <span>
#include <vector>

namespace switchyard::model {

/// A round whose cross-core one-way time is below this multiple of the
/// same-core one is co-located. Against the same-core hand-off (a coroutine
/// switch and a message), the cross-core one normally takes about 15 times as
/// long (the peer's worker must be woken), and co-located about 4.5 times (the
/// two threads share a core's caches): the threshold is about their geometric
/// mean, 8.3 (docs/cost-model.md, "The host's states").
inline constexpr double kColocatedRatio = 8.0;

/// detect_colocation()'s verdict per round, and how many rounds were normal.
struct ColocationVerdict {
  std::vector<bool> colocated;  ///< per round
  std::size_t normal = 0;  ///< rounds not co-located
  bool all_colocated() const noexcept { return normal == 0; }  ///< every round co-located
};

/// Classifies each round by its cross-core and same-core one-way times (ns,
/// one figure per round each, same length, all > 0; else
/// std::invalid_argument).
ColocationVerdict detect_colocation(std::span<const double> cross_core_one_way_ns,
                                    std::span<const double> same_core_one_way_ns, double ratio = kColocatedRatio);

}  // namespace switchyard::model
