#pragma once
// Times a collective on the runtime: one job of p processes plans it once, runs
// it once untimed, then `repeat` timed runs, each from a barrier to the end of
// a barrier after it (the clock of rank 0). Every byte of every run is checked
// where it lands (receive buffers poisoned before each run); a wrong byte
// throws schedulers::PayloadError.

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/collectives/operation.hpp"
#include "switchyard/runtime.hpp"

namespace switchyard::collectives {

// Milliseconds of each timed run, in order.
std::vector<double> measure_collective(Runtime& rt, Operation op, const std::string& algorithm, Rank processes,
                                       std::uint64_t bytes, std::uint32_t repeat, std::uint64_t seed = 1);

// Bytes the buffers and staging of one run take over all processes, at most:
// what a caller checks against the machine's memory before measuring.
std::uint64_t memory_needed(Operation op, const std::string& algorithm, Rank processes, std::uint64_t bytes);

}  // namespace switchyard::collectives
