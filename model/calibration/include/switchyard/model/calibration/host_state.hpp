#pragma once
// The host's state, as far as it moves the calibration: three figures timed
// on bare threads, outside the runtime, so that what they show is the host
// and not switchyard.
//  - private copy: one core copying 8 messages of 16 KiB (its private cache),
//    ns per 64-byte line. The unit's own work; the host moves it less, but
//    it moves: over the same 2 min 40 s, 16-second windows' medians of 0.76
//    to 1.43 ns; and a whole calibration ran at 1.21 ns (the four after it at
//    0.65-0.94) with its unit at 1.87 ns against their 1.30-1.35: the host
//    slowing the core itself all through, which slow_rounds.hpp cannot tell
//    within one calibration.
//  - beyond-cache gather: each core reading 8-byte pieces one per cache line
//    out of 8 MiB of its own, down the columns of a grid as calibrate's
//    packing does (gathered_line), ns per piece. What the shared cache and
//    memory cost, where calibrate's packing and its coherence terms beyond
//    the private cache are measured. The host moves it several-fold: over
//    2 min 40 s of `model probe --rounds 150 --pause 1000`, the medians of
//    16-second windows ranged from 4.5 to 9.2 ns a piece.
//  - cross-core line round trip: two threads on different cores passing one
//    cache line back and forth, ns per round trip. What coherence costs
//    between the two cores (the coherence terms x and x_p): 16-second
//    windows' medians of 437-499 ns over the same 2 min 40 s, single rounds
//    up to 9 times apart, a VM's two vCPUs being wherever the host runs them.
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

}  // namespace switchyard::model::calibration
