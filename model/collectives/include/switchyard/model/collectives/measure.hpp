#pragma once
// Times collectives on the runtime: one job of p processes plans every
// algorithm once, runs each once untimed, then `repeat` rounds in which every
// algorithm takes one sample, in a carry-over balanced order
// (balanced_order.hpp), so that the algorithms share whatever the machine's
// other tenants do during the job and none always runs after the same other.
// A sample is `batch` back-to-back runs from a barrier to the end of a
// barrier after them, divided by batch (the clock of rank 0): a small
// collective takes little longer than the barriers' and the wake-ups' noise
// (docs/cost-model.md, "Calibration's probes"), and a batch averages it out.
// Receive buffers are poisoned before every sample and every byte is checked
// where it lands after it (within a batch, the runs after the first rewrite
// the same bytes; the untimed run and every batch-of-one sample are each
// checked alone); a wrong byte throws schedulers::PayloadError. `root`
// scatters (one-to-all) or gathers (all-to-one); all-to-all requires 0
// (CollectivePlan::create).

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/model/collectives/operation.hpp"
#include "switchyard/runtime.hpp"

namespace switchyard::model::collectives {

/// Milliseconds per run of each sample: result[a][k] is algorithms[a]'s k-th.
std::vector<std::vector<double>> measure_collectives(Runtime& rt, Operation op,
                                                     const std::vector<std::string>& algorithms, Rank processes,
                                                     std::uint64_t bytes, std::uint32_t repeat, std::uint32_t batch = 1,
                                                     std::uint64_t seed = 1, Rank root = 0);

/// Bytes a job of one algorithm takes over all processes, at most (a double:
/// p^2 L overflows 64 bits): the
/// buffers and staging of a run, and what each message posted at once and each
/// process cost beside them; what a caller checks against the machine's memory
/// (machine_memory.hpp) before measuring.
double memory_needed(Operation op, const std::string& algorithm, Rank processes, std::uint64_t bytes);

}  // namespace switchyard::model::collectives
