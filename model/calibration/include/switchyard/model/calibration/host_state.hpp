#pragma once
// The host's state, as far as it moves the calibration: three figures timed
// on bare threads, outside the runtime, so that what they show is the host
// and not switchyard.
//  - private copy: one core copying 8 messages of 16 KiB (its private cache),
//    ns per 64-byte line. The unit's own work; the host moves it less, but
//    it moves: short windows' medians nearly two-fold apart over minutes,
//    and a whole calibration ran 1.3-1.9 times as slow as the four after it,
//    with its unit 1.4 times theirs: the host slowing the core itself all
//    through, which slow_rounds.hpp cannot tell within one calibration.
//  - beyond-cache gather: each core reading 8-byte pieces one per cache line
//    out of 8 MiB of its own, down the columns of a grid as calibrate's
//    packing does (gathered_line), ns per piece. What the shared cache and
//    memory cost, where calibrate's packing and its coherence terms beyond
//    the private cache are measured. The host moves it several-fold over
//    minutes (a `model probe` series: docs/cost-model.md, "The host's
//    states").
//  - cross-core line round trip: two threads on different cores passing one
//    cache line back and forth, ns per round trip. What coherence costs
//    between the two cores (the coherence terms x and x_p): windows' medians
//    within 15 % of each other over minutes, single rounds up to 9 times
//    apart, a VM's two vCPUs being wherever the host runs them.
// A calibration records them (measured["host_*"]), so that two machine files
// that differ say whether the host differed when they were taken, and
// `switchyard model probe` prints them round by round.

#include <cstdint>
#include <vector>

namespace switchyard {
class Topology;
}

namespace switchyard::model::calibration {

namespace detail {
/// The gathers read the pieces of a message down the columns of a grid
/// kGatherRun lines wide, as 2-lev-r,c reads R blocks C blocks apart: read
/// line after line, the prefetcher streams them (calibration.cpp, packing).
inline constexpr std::uint64_t kGatherRun = 32;
/// The line of a message's piece j (of `pieces`, a multiple of kGatherRun).
constexpr std::uint64_t gathered_line(std::uint64_t j, std::uint64_t pieces) {
  return j % kGatherRun * (pieces / kGatherRun) + j / kGatherRun;
}
}  // namespace detail

/// Samples of the three host-state figures (see the file's description), one per
/// run: recorded beside a calibration, not used by any parameter.
struct HostStateSamples {
  std::vector<double> private_copy_ns_per_line;  ///< per run
  std::vector<double> gather_ns_per_piece;  ///< per run
  std::vector<double> line_round_trip_ns;  ///< per run; empty when both cores are one
};

/// `runs` samples of each figure: the copy and the gather on core_a, the
/// round trip between core_a and core_b (OS CPU numbers the topology allows).
/// Every byte copied or gathered is checked; a wrong one throws
/// std::runtime_error. runs == 0, or a core the topology does not allow:
/// std::invalid_argument.
HostStateSamples sample_host_state(const switchyard::Topology& topology, int core_a, int core_b, std::uint32_t runs);

}  // namespace switchyard::model::calibration
