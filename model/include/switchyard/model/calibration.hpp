#pragma once
// Measuring the model's parameters on this machine (`switchyard model
// calibrate`): short runs of two processes on two different cores of the
// runtime, each figure the lower quartile of repeated runs (the machine is
// shared and noisy; other tenants only add time, so the faster runs are what
// stays put between calibrations). Clocks start after a handshake that wakes
// both cores, and the processes poll rather than block, so that no figure
// includes waking a sleeping worker.
//
// What the C³ quantities are inside one shared-memory node (the core level):
//  - processor: a core. Processes are coroutines, many per core; a core does
//    the sends and receives of all its processes one after the other
//    (ModelVariant::calibrated charges per core).
//  - packet, l: a cache line, 64 bytes: what one core hands another through
//    the rings (and the unit of coherence traffic), read from the hardware,
//    not measured. One unit is the time to stream one packet core to core.
//  - unit_ns: the time of one unit: large messages (16 KiB, single copy by
//    the receiver) streamed both ways between core A and core B at once (both
//    cores busy, as in an exchange), per 64 bytes received by one core, on the
//    receivers' clocks (a sender's completion waits for an answer: latency).
//  - set-up, s: the time of a message beyond its packets, in units: a stream
//    of small messages (64 B, eager: copied into the ring and out), per
//    message, less the one packet it carries.
//  - latency, h: the time a message is in flight that neither core spends on
//    it, in units: half a ping-pong round trip of an 8-byte message, less the
//    per-message time of the small stream (the cores' own work).
//  - link and bisection, b: a link is the core-to-core path (a pair of rings
//    through the shared cache); the bisection cuts the cores into halves and b
//    is how many packets cross it per unit: 2 x the one-way stream's time over
//    the both-ways stream's, at most 2 (2 on two cores when both directions go
//    at full speed, less when they share the memory system).
//  - same core: no link and no latency; the messages are copies on that core,
//    charged through its S_i + R_i (recorded as same_core_* in `measured`).
// The node-to-node level (between nodes, the MPI transport) is left empty.
//
// The exchange correction (MachineFile::exchange): the C³ charges are linear
// in the traffic, so splitting an exchange into phases never lowers them,
// while on this machine a flood of small (eager) messages costs several times
// a phase of them per message. calibrate() runs each exchange scheduler "auto"
// chooses among on Fig. 7 matrices of 16 processes, density 4, at 128 B,
// 1 KiB and 16 KiB, and keeps measured / predicted per scheduler and size.

#include <cstdint>
#include <vector>

#include "switchyard/model/machine_file.hpp"

namespace switchyard {
class Runtime;
}

namespace switchyard::model {

struct CalibrationOptions {
  std::uint32_t repetitions = 21;  // runs per figure; the lower quartile is kept
};

// Measures the core level on rt (which must have at least one core; with one
// core the cross-core figures are those of the same core). Every payload byte
// is verified; a wrong one throws std::runtime_error.
MachineFile calibrate(Runtime& rt, const CalibrationOptions& options = {});

}  // namespace switchyard::model
