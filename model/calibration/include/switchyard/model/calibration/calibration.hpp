#pragma once
// Measuring the model's parameters on this machine (`switchyard model
// calibrate`): short runs of two processes on two different cores of the
// runtime, the figures' runs interleaved in rounds, each figure the median
// over the rounds of each round's lower decile (the machine is shared and
// noisy; other tenants only add time, so the faster runs are what stays put
// between calibrations, and a round in another state of the host is
// outvoted). Clocks start after a handshake that wakes both cores. Processes
// block (as they do in every job: polling would only delay the peer on a
// shared machine), so a one-way stream includes waking the sender for its
// answers; the unit is taken from a stream on one core.
//
// What the C³ quantities are inside one shared-memory node (the core level):
//  - processor: a core. Processes are coroutines, many per core; a core does
//    the sends and receives of all its processes one after the other
//    (ModelVariant::calibrated charges per core).
//  - packet, l: a cache line, 64 bytes: what one core hands another through
//    the rings (and the unit of coherence traffic), read from the hardware,
//    not measured. One unit is the time to stream one packet core to core.
//  - unit_ns: the time of one unit: one core copying one packet, from a
//    stream of 8 messages of 16 KiB between two processes of one core (single
//    copy), per 64 bytes. (Streams across cores vary several-fold between
//    runs on this shared machine; a core's own copy stays within ~10 %. With
//    32 messages, 1 MiB in and out, the stream filled this machine's 1 MiB
//    L2 and its time moved by up to 60 % between runs with where the
//    buffers' pages happened to fall.)
//  - set-up, s: the time of a message beyond its packets, in units: a stream
//    of small messages (64 B, eager: copied into the ring and out), per
//    message, less the one packet it carries.
//  - latency, h: the time a message is in flight that neither core spends on
//    it, in units: half a ping-pong round trip of an 8-byte message, less the
//    per-message time of the small stream (the cores' own work).
//  - link and bisection, b: a link is the core-to-core path (a pair of rings
//    through the shared cache); the bisection cuts the cores into halves and b
//    is how many packets cross it per unit: 2 (both directions at once) times
//    a core's copy time over the time of the same messages streamed both ways
//    across the cut, at most 1 (b = 2 when crossing is as fast as copying):
//    that ratio per round (the two streams run back to back), the median
//    over the rounds.
//  - coherence, x + x_p per packet (ring-sync): 64 processes in a lockstep
//    ring shift of a rendezvous message, neighbours on the other core; once
//    with the payloads written once before the first repetition (as a
//    collective's send buffer: the receiver's core keeps a clean copy), once
//    with each written right before its send, as an algorithm packs (the
//    receiver's copy read those lines in the previous repetition, so the
//    writes take them back from the other core's cache, and the next copy
//    reads them out of the writer's). The difference per message and core, at
//    the smallest rendezvous message (9 packets) and at 2 KiB (32), gives x
//    (the charge at 9 packets, machine.hpp) and x_p (per packet beyond). The
//    four run in turn within every repetition of one job, and
//    the medians of the per-repetition differences are kept (not the
//    difference of each one's lower decile). (Writing the in-place payloads
//    again before every repetition, as before, hid the reader's half: x came
//    out 2-3 times too small.)
//  - the co-located state (colocation.hpp): every round opens and closes
//    with an 8-byte one-way hand-off on one core beside the cross-core one;
//    rounds where the two are alike at either end are left out, and
//    calibrate tries again when all are. A
//    machine file measured co-located all through says so (colocated).
//  - slow rounds (slow_rounds.hpp): a round whose 16 KiB or 64-byte
//    same-core copies ran far slower than in the fastest round is left out
//    too; calibrate tries again while fewer than half the rounds are left
//    (measured["slow_rounds"] says how many were left out).
//  - the host's state (host_state.hpp): every round also times a private
//    copy, a gather beyond the private cache and a cross-core line round
//    trip on bare threads, outside the runtime; recorded (measured["host_*"],
//    each the median over the kept rounds of each round's lower decile), used
//    by no parameter: two files that differ say whether the host did.
//  - repeatability (scripts/calibration_repeatability.py): l, s, h, b, the
//    unit, m and w mostly repeat within 10 % between calibrations in the
//    normal state (they move more when the host slows cross-core traffic for a
//    minute, as in two of twelve calibrations once: s by 18 %). x, x_p, the
//    beyond-cache fractions and pack_piece do not: they measure the shared
//    cache, and on this VM it goes through states that last half a minute to a
//    minute, in which a round's packing difference sat at one of four levels
//    up to three times apart, with every round of one calibration alike. A
//    calibration takes one state's values; more rounds, a low quantile over
//    the rounds, and two-minute windows of 35-round calibrations did not make
//    two of them agree. With each of 37 calibrations taken over 20 minutes,
//    the collectives' auto chose alike in 34 of the regret grid's 35 cases,
//    and its worst regret on the same measurements moved by 0.013 at most.
//    Combining back-to-back calibrations did not help either: files each
//    holding the median of 7 or 11, or the interquartile mean of 15 (2-5
//    minutes each), agreed within 10 % on 27, 42 and 29 of the 48 numbers
//    scripts/calibration_repeatability.py compares, three files a set, where
//    triples of single calibrations taken the same day agreed on 4-40 (set
//    medians 6.5-25). The host's states outlast minutes: one 15-calibration
//    file recorded pack_piece 5.3 and the 16 KiB exchange corrections 1.5
//    where the two before it had 3.7-4.0 and 1.1-1.2, and a gather beyond the
//    private cache on a bare thread, outside switchyard, ran 3.5 times as slow
//    for over a minute, then as fast as before (with 2 MiB pages, 2.4 times).
//    The times: docs/cost-model.md, "Repeatability of a calibration".
//  - same core: no link and no latency; the messages are copies on that core,
//    charged through its S_i + R_i (recorded as same_core_* in `measured`).
// The node-to-node level (between nodes, the MPI transport) is left empty.
//
// The exchange correction (MachineFile::exchange): the C³ charges are linear
// in the traffic, so splitting an exchange into phases never lowers them,
// while on this machine a flood of small (eager) messages costs several times
// a phase of them per message, the more so the more messages a core holds.
// calibrate() runs each exchange scheduler "auto" chooses among on Fig. 7
// matrices of 16 processes, density 4, and of 64 processes, density 16, at
// 128 B, 1 KiB and 16 KiB, and keeps measured / predicted per scale,
// scheduler and size, the measured time less that of an exchange with
// nothing to send (kept per process beside the ratios: every candidate pays
// it); each time the median over `rounds` jobs of each job's lower decile,
// the candidates interleaved in every job (balanced_order.hpp).

#include <chrono>
#include <cstdint>
#include <vector>

#include "switchyard/model/colocation.hpp"
#include "switchyard/model/machine_file.hpp"
#include "switchyard/progress.hpp"

namespace switchyard {
class Runtime;
}

namespace switchyard::model::calibration {

/// How calibrate() samples: runs per figure, rounds, and retries of a disturbed measurement.
struct CalibrationOptions {
  /// Runs per figure, in all, rounded up to an even number per round (the
  /// paired figures difference pairs of runs).
  /// measured["runs"] says how many ran.
  std::uint32_t repetitions = 210;
  /// The runs of every figure are split into this many rounds, each running
  /// every figure in turn: a burst of load then hits a few runs of each.
  std::uint32_t rounds = 7;
  /// Tries of the whole measurement while every round is found in the
  /// co-located state (colocation.hpp), or more than half are slow
  /// (slow_rounds.hpp), a pause between them.
  std::uint32_t attempts = 3;
  std::chrono::milliseconds retry_pause{5000};  ///< the pause between two attempts
  /// Hears of each measurement done (optional).
  Progress progress;
};

/// Measures the core level on rt (which must have at least one core; with one
/// core the cross-core figures are those of the same core). Every payload byte
/// is verified; a wrong one throws std::runtime_error.
MachineFile calibrate(Runtime& rt, const CalibrationOptions& options = {});

/// The two cores every cross-core figure runs between (OS CPU numbers): the
/// runtime's first two, or its one core twice. `model probe` samples the same.
struct CalibrationCores {
  /// The first core's OS CPU number.
  int a = 0, b = 0;  ///< the second's (a, when the runtime has one core)
};
/// The two cores calibrate() and `model probe` run the cross-core figures between.
CalibrationCores calibration_cores(const Runtime& rt);

/// The co-location check (colocation.hpp) alone, as calibrate() makes it at
/// both ends of every round: `rounds` rounds, each timing `runs` cross-core and
/// then `runs` same-core 8-byte hand-offs (ns, one way); per round the lower
/// decile of each, and the verdict on them. Both must be >= 1, else
/// std::invalid_argument. On one core every round is normal.
struct ColocationProbe {
  /// Per round: the lower decile of the cross-core hand-offs (ns, one way).
  std::vector<double> cross_core_one_way_ns, same_core_one_way_ns;  ///< per round
  ColocationVerdict verdict;  ///< co-located or normal, per round
};
/// The co-location probe on rt (see ColocationProbe).
ColocationProbe probe_colocation(Runtime& rt, std::uint32_t rounds, std::uint32_t runs);

}  // namespace switchyard::model::calibration
