#pragma once
// The host's state, as far as it moves the calibration: three figures timed
// on bare threads, outside the runtime, so that what they show is the host
// and not switchyard.
//  - private copy: one core copying 8 messages of 16 KiB (its private cache),
//    ns per 64-byte line. The unit's own work; the host mostly leaves it be
//    (0.57-0.67 ns over 4 minutes), but some calibrations ran all through
//    at 0.94-1.27: the host slowing the core itself, which slow_rounds.hpp
//    cannot tell within a calibration that it lasts from start to end (one
//    such had its unit at 1.87 ns against 1.30-1.35 in the four after it).
//  - beyond-cache gather: one core reading 8-byte pieces one per cache line
//    out of 8 MiB, down the columns of a grid as calibrate's packing does
//    (gathered_line), ns per piece. What the shared cache and memory cost:
//    what calibrate's packing, and the coherence terms beyond the private
//    cache, measure. The host moves it several-fold: in 4 minutes of a probe
//    on this machine, the medians of 15-second windows ranged from 2.1 to
//    7.1 ns a piece, while the private copy stayed within 12 %.
//  - cross-core line round trip: two threads on different cores passing one
//    cache line back and forth, ns per round trip. What coherence costs
//    between the two cores (the coherence terms x and x_p): 470-840 ns here,
//    a VM's two vCPUs being wherever the host runs them.
// A calibration records them (measured["host_*"]), so that two machine files
// that differ say whether the host differed when they were taken, and
// `switchyard model probe` prints them round by round.

#include <cstdint>
#include <vector>

namespace switchyard {
class Topology;
}

namespace switchyard::model {

namespace detail {
// The gathers read the pieces of a message down the columns of a grid
// kGatherRun lines wide, as 2-lev-r,c reads R blocks C blocks apart: read
// line after line, the prefetcher streams them (calibration.cpp, packing).
inline constexpr std::uint64_t kGatherRun = 32;
// The line of a message's piece j (of `pieces`, a multiple of kGatherRun).
constexpr std::uint64_t gathered_line(std::uint64_t j, std::uint64_t pieces) {
  return j % kGatherRun * (pieces / kGatherRun) + j / kGatherRun;
}
}  // namespace detail

struct HostStateSamples {
  std::vector<double> private_copy_ns_per_line;    // per run
  std::vector<double> gather_ns_per_piece;         // per run
  std::vector<double> line_round_trip_ns;          // per run; empty when both cores are one
};

// `runs` samples of each figure: the copy and the gather on core_a, the
// round trip between core_a and core_b (OS CPU numbers the topology allows).
// Every byte copied or gathered is checked; a wrong one throws
// std::runtime_error. runs == 0, or a core the topology does not allow:
// std::invalid_argument.
HostStateSamples sample_host_state(const switchyard::Topology& topology, int core_a, int core_b, std::uint32_t runs);

}  // namespace switchyard::model
