#pragma once
// Charging a superstep and an algorithm in units (the paper's section 2).
//
// Per submachine with parameters p', h', b' (Machine::submachine):
//   S_i, R_i   the total send and receive times of Fig. 1, by protocol;
//   cong       the number of communicating (src, dst) pairs;
//   L_a        the average packets per communicating pair;
//   C_l = L_a * ceil(cong / b'),  C_p = L_a * ceil(cong / p') * h';
//   communication = max_i (S_i + R_i) + C_l + C_p.
// Submachines run independently: a superstep costs the most expensive one.
// Computation units are max(1, ceil(t_i / l)) with t_i the bytes accessed.
//
// ModelVariant::calibrated (a shared-memory node whose p processes share
// `cores` cores, placed round-robin): a core does the sends and receives of
// all its processes one after the other, so max_i (S_i + R_i) becomes the
// largest sum of S_i + R_i over the processes of one core; congestion is
// counted over pairs on different cores only (same-core messages cross no
// link), and processor congestion uses the number of cores.
//
// ModelVariant::ring_sync (same placement), from what the runtime does per
// message and what was measured (calibration.hpp):
//   work_c   = sum over the processes i of core c of
//                s * (n_s(i) + n_r(i))          a message's set-up at both ends
//              + P_s(i) + P_r(i)                its packets copied in and out
//              + w * [n_s(i) + n_r(i) > 0]      the process blocks at the superstep's end
//                                               and is resumed (its frame, mailbox and
//                                               buffers back into the cache)
//              + w * [i sends past the eager limit]  ... and for its rendezvous sends' completion
//              + m_c * (n_r(i) (n_r(i) - 1)     matching: an arrival walks the posted
//                     - sum_k o_k (o_k - 1)) / 4  receives (and a receive the unexpected
//                                               messages) posted before its own and
//                                               still waiting, FIFO lists of n_r(i) at
//                                               most: half of every pair's on average,
//                                               but a pair from two senders on one core k
//                                               that send nothing else this superstep
//                                               (o_k of them) arrives in posting order
//                                               (the core runs them in rank order, and
//                                               the collectives post in rank order);
//                                               m_c per entry: m_in_cache while the
//                                               receives posted on core c this superstep
//                                               fit in its cache (256), m at 2048 and
//                                               beyond, log-interpolated between
//              + sum over the rendezvous messages i sends to another core that it
//                packed or relayed (not its own buffer sent in place) of
//                  x + x_p * (packets(message) - P_0)  P_0: the packets of the smallest
//                                               rendezvous message (eager_limit + 1 bytes)
//                                               the other core's single copy read the
//                                               buffer's lines out of this core's cache
//                                               in the previous run; writing them again
//                                               (packing, or taking a message in) first
//                                               invalidates that copy, line by line,
//                                               and the other core's copy reads every
//                                               line back out of this core's cache:
//                                               coherence misses (calibration.hpp),
//                                               x_p per line, x per message of P_0 (a short
//                                               copy's misses are not overlapped by the
//                                               prefetcher). A buffer sent in place is
//                                               only read (the other core keeps a clean
//                                               copy); an eager message is read from
//                                               the ring. When the core writes more
//                                               bytes of such messages in the superstep
//                                               than its private cache holds, they have
//                                               left it before they are read: every one
//                                               of them is charged, f times the above
//                                               to another core, f_s times to its own
//                                               (Machine::coherence_beyond_cache)
//              + sum over the messages whose pieces i copies one by one (packs
//                before sending, or unpacks after receiving: Transfer::packed)
//                  k * pieces + packets      k: a piece's copy (its call and the miss
//                                               on a block of a buffer gone cold while
//                                               the core served its other processes)
//   C_l      = L_a * ceil(cross / b)            the link, as `calibrated`
//   sync     = h, if any message crosses cores  the superstep ends when its last
//                                               message has crossed: one hand-off
//            + 2h * floor(R / ring_bytes)       R: the most bytes one superstep puts in
//                                               one core-to-core ring (eager: 32-byte
//                                               header + payload in 16-byte slots;
//                                               rendezvous: 48 bytes, 32 back); each
//                                               time the ring fills, the sender waits a
//                                               round trip for the other core to drain it
//   communication = max_c work_c + C_l + sync   (no C_p: a node has no intermediate
//                                               processors for a message to queue at)

#include <cstdint>
#include <vector>

#include "switchyard/model/machine.hpp"
#include "switchyard/model/superstep.hpp"

namespace switchyard::model {

/// What one superstep costs, in units: its most expensive submachine's terms.
struct SuperstepCost {
  double max_send_receive = 0;  ///< max_i (S_i + R_i) (per core: calibrated)
  double link_congestion = 0;  ///< C_l
  double processor_congestion = 0;  ///< C_p
  double synchronisation = 0;  ///< ring_sync: the superstep's hand-off and ring refills
  double communication = 0;  ///< the sum of the four
  double computation = 0;  ///< max_i ceil(t_i / l), at least 1
  double total() const noexcept { return communication + computation; }  ///< communication + computation
};

/// S_i and R_i of one process in one submachine's transfers (Fig. 1).
struct SendReceive {
  double send = 0;  ///< S_i, in units
  double receive = 0;  ///< R_i, in units
};

/// Fig. 1 for every member of a submachine: result[k] is members[k]'s S and R.
std::vector<SendReceive> send_receive_times(const Machine& machine, const Submachine& submachine);

/// The charges of one superstep on `machine` (by machine.variant; see the file's description).
SuperstepCost cost(const Machine& machine, const Superstep& step);

/// What an algorithm costs, in units: the sums over its supersteps.
struct AlgorithmCost {
  double communication = 0;  ///< sum of the supersteps' communication
  double computation = 0;  ///< sum of the supersteps' computation
  std::vector<SuperstepCost> steps;  ///< each superstep's cost, in order
  double total() const noexcept { return communication + computation; }  ///< communication + computation
};

/// The charges of every superstep of `algorithm`, and their sums.
AlgorithmCost cost(const Machine& machine, const Algorithm& algorithm);

}  // namespace switchyard::model
