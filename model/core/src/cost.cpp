#include "switchyard/model/cost.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace switchyard::model {
namespace {

// What Fig. 1 needs of one process: messages and packets each way, and the
// packets of its largest message sent.
struct Traffic {
  double sends = 0, receives = 0;
  double sent_packets = 0, received_packets = 0;
  double largest_sent = 0;
  bool rendezvous = false;  // sends a message past the eager limit (ring_sync)
  // Per core, the receives whose sender sends nothing else this superstep
  // (ring_sync's matching, expected_receives_passed).
  std::vector<double> receives_from_lone_senders;
};

// Fig. 1: S_i and R_i by protocol. h enters only for a process that sends
// (receives) at all: a process without messages spends no time on them.
SendReceive fig1(const Machine& m, double h, const Traffic& t) {
  const double s = m.setup;
  SendReceive out;
  const bool wormhole = m.routing == Routing::wormhole;
  if (m.sends == SendProtocol::nonblocking) {
    if (t.sends > 0) out.send = s * t.sends + (wormhole ? h : h * t.largest_sent) + t.sent_packets;
    out.receive = t.received_packets;
  } else {
    if (t.sends > 0) out.send = 2 * (s + h) * t.sends + (wormhole ? h + t.sent_packets : h * t.sent_packets);
    if (t.receives > 0)
      out.receive = (s + h) * t.receives + (wormhole ? h + t.received_packets : h * t.received_packets);
  }
  return out;
}

// Per member of `sub` (by index), its traffic; self-transfers are local copies
// and no communication, unless the machine charges them.
std::vector<Traffic> traffic(const Machine& m, const Submachine& sub) {
  std::unordered_map<ProcessId, std::size_t> index;
  for (std::size_t k = 0; k < sub.members.size(); ++k) index.emplace(sub.members[k], k);
  std::vector<Traffic> out(sub.members.size());
  for (const Transfer& t : sub.transfers) {
    if (t.src == t.dst && !m.charge_local_copies) continue;
    const double n = m.packets(t.bytes);
    Traffic& from = out.at(index.at(t.src));
    Traffic& to = out.at(index.at(t.dst));
    from.sends += 1;
    from.sent_packets += n;
    from.largest_sent = std::max(from.largest_sent, n);
    from.rendezvous = from.rendezvous || (t.src != t.dst && t.bytes > m.eager_limit);
    if (t.src == t.dst) continue;  // a charged local copy counts as a send, as the paper counts it
    to.receives += 1;
    to.received_packets += n;
  }
  for (const Transfer& t : sub.transfers) {
    if (t.src == t.dst || out[index.at(t.src)].sends != 1) continue;
    std::vector<double>& lone = out[index.at(t.dst)].receives_from_lone_senders;
    lone.resize(m.cores, 0.0);
    lone[t.src % m.cores] += 1;
  }
  return out;
}

// Congestion over `pairs` communicating pairs carrying `total_packets`, with
// bisection b and p processors of latency h (section 2.2).
void charge_congestion(SuperstepCost& c, double pairs, double total_packets, double b, double p, double h) {
  if (pairs == 0) return;
  const double average = total_packets / pairs;  // L_a
  c.link_congestion = average * std::ceil(pairs / b);
  c.processor_congestion = average * std::ceil(pairs / p) * h;
}

double computation_units(const Machine& m, const Superstep& step) {
  std::uint64_t accessed = 0;
  for (const Submachine& sub : step.submachines) accessed = std::max(accessed, sub.accessed_bytes);
  return std::max(1.0, m.packets(accessed));
}

// The paper: every submachine on its own processors and links, charged with
// its own parameters; the superstep costs its most expensive submachine.
SuperstepCost paper_cost(const Machine& m, const Superstep& step) {
  SuperstepCost worst;
  for (const Submachine& sub : step.submachines) {
    const SubmachineParameters params = m.submachine(sub.shape, sub.members.size());
    SuperstepCost c;
    double pairs = 0, total = 0;
    for (const Traffic& t : traffic(m, sub)) {
      const SendReceive sr = fig1(m, params.latency, t);
      c.max_send_receive = std::max(c.max_send_receive, sr.send + sr.receive);
      pairs += t.sends;
      total += t.sent_packets;
    }
    charge_congestion(c, pairs, total, params.bisection, static_cast<double>(params.processes), params.latency);
    c.communication = c.max_send_receive + c.link_congestion + c.processor_congestion;
    if (c.communication > worst.communication) worst = c;
  }
  return worst;
}

// A shared-memory node: the processes of every submachine share the same
// `cores` cores (process i on core i mod cores, the runtime's round-robin), so
// a core spends the sum of its processes' S_i + R_i; only pairs on different
// cores cross a link between cores.
SuperstepCost calibrated_cost(const Machine& m, const Superstep& step) {
  SuperstepCost c;
  std::vector<double> busy(m.cores, 0.0);
  double cross_pairs = 0, cross_packets = 0;
  for (const Submachine& sub : step.submachines) {
    const SubmachineParameters params = m.submachine(sub.shape, sub.members.size());
    const std::vector<Traffic> all = traffic(m, sub);
    for (std::size_t k = 0; k < all.size(); ++k) {
      const SendReceive sr = fig1(m, params.latency, all[k]);
      busy[sub.members[k] % m.cores] += sr.send + sr.receive;
    }
    for (const Transfer& t : sub.transfers) {
      if (t.src % m.cores == t.dst % m.cores) continue;  // same core: no link (nor a self-copy)
      cross_pairs += 1;
      cross_packets += m.packets(t.bytes);
    }
  }
  c.max_send_receive = *std::max_element(busy.begin(), busy.end());
  charge_congestion(c, cross_pairs, cross_packets, m.bisection, static_cast<double>(m.cores), m.latency);
  c.communication = c.max_send_receive + c.link_congestion + c.processor_congestion;
  return c;
}

// Bytes a message of `bytes` puts in the ring towards its receiver's core, and
// in the ring back (transport/wire.hpp: 16-byte slots, a 32-byte header;
// above the eager limit only a 48-byte rendezvous packet, answered by a
// 32-byte kSendDone).
constexpr std::uint64_t kSlot = 16, kHeader = 32, kRendezvous = 48, kSendDone = 32;
std::uint64_t ring_bytes_there(const Machine& m, std::uint64_t bytes) {
  return bytes > m.eager_limit ? kRendezvous : kHeader + (bytes + kSlot - 1) / kSlot * kSlot;
}

// What the arrivals of a process's receives walk past in its posted list (and
// its posts in its unexpected one), in all: one receive for each pair of
// receives whose messages arrive in the other order than posted. Any two
// messages do with even chance, but those of two senders on one core that
// send nothing else: a core runs its processes in rank order, and the
// collectives post their receives in rank order. (Charged n (n - 1) / 4,
// 1-lev-dir's gather at p = 300, L = 40 B came to 70 k units, 48 k of them
// matching, and took 36 k; auto then took 2-lev-rec at L = 3000 B, 23 %
// slower than 1-lev-dir.)
double expected_receives_passed(const Traffic& t) {
  double in_order_pairs = 0;
  for (double lone : t.receives_from_lone_senders) in_order_pairs += lone * (lone - 1);
  return (t.receives * (t.receives - 1) - in_order_pairs) / 4;
}

// Units per receive-list entry walked on a core that posted `posted` receives
// in the superstep: match_in_cache while their entries fit in its cache,
// match once they are far past it, log-interpolated between the two list
// sizes calibration measured (machine.hpp). (Charged match alone, a gather's
// 1-lev-dir at p = 300 came to 44 k units against 32 k on one core, where it
// took the same time on two cores as on one; docs/cost-model.md,
// "Calibration's probes".)
double match_per_entry(const Machine& m, double posted) {
  const double lo = std::log2(double{kMatchInCacheEntries}), hi = std::log2(double{kMatchOutOfCacheEntries});
  const double t = std::clamp((std::log2(std::max(posted, 1.0)) - lo) / (hi - lo), 0.0, 1.0);
  return m.match_in_cache + (m.match - m.match_in_cache) * t;
}

// One core's work for one process's traffic (cost.hpp: work_c), but for its
// matching (match_per_entry).
double process_work(const Machine& m, const Traffic& t) {
  double w = m.setup * (t.sends + t.receives) + t.sent_packets + t.received_packets;
  if (t.sends + t.receives > 0) w += m.wake;
  if (t.rendezvous) w += m.wake;
  return w;
}

// The sender's own data, sent from where the caller put it: a transfer without
// pieces (an exchange's message), or pieces that all start at the sender and go
// to consecutive ranks in order (contiguous blocks of its send buffer). Anything
// else was packed or received, i.e. written on the sender's core during the
// algorithm.
bool sent_in_place(const Submachine& sub, const Transfer& t) {
  for (std::uint64_t k = 0; k < t.piece_count; ++k) {
    const Piece& piece = sub.pieces.at(t.first_piece + k);
    if (piece.origin != t.src || piece.target != sub.pieces.at(t.first_piece).target + k) return false;
  }
  return true;
}

// What a core spends copying a packed (or unpacked) message's pieces one by
// one: each piece's copy, and its packets.
double copy_units(const Machine& m, const Transfer& t) {
  return m.pack_piece * static_cast<double>(t.piece_count) + m.packets(t.bytes);
}

// One core's rendezvous messages of the superstep whose payload it wrote
// during the algorithm (packed or relayed): their coherence charges, to other
// cores and to its own, and the bytes they put in its cache.
struct WrittenRendezvous {
  double to_other_cores = 0, to_this_core = 0;
  double bytes = 0;
};

// Below the core's private cache, only the messages to another core pay the
// coherence misses; beyond it, the written lines have left the private cache
// before any receiver reads them, and every such message pays the misses to
// the shared cache, the fractions of the cross-core charge measured there
// (Machine::coherence_beyond_cache).
double coherence_charge(const Machine& m, const WrittenRendezvous& w) {
  if (m.private_cache_bytes > 0 && w.bytes > static_cast<double>(m.private_cache_bytes))
    return m.coherence_beyond_cache * w.to_other_cores + m.coherence_beyond_cache_same_core * w.to_this_core;
  return w.to_other_cores;
}

SuperstepCost ring_sync_cost(const Machine& m, const Superstep& step) {
  SuperstepCost c;
  const std::size_t cores = m.cores;
  std::vector<double> busy(cores, 0.0);
  std::vector<WrittenRendezvous> written(cores);
  std::vector<double> walked(cores, 0.0), posted(cores, 0.0);  // receive-list entries, receives
  std::vector<std::uint64_t> ring(cores * cores, 0);  // [from * cores + to]: bytes this superstep
  double cross_pairs = 0, cross_packets = 0;
  for (const Submachine& sub : step.submachines) {
    const std::vector<Traffic> all = traffic(m, sub);
    for (const Transfer& t : sub.transfers) {
      const std::size_t a = t.src % cores, b = t.dst % cores;
      if (t.packed) busy[a] += copy_units(m, t);
      if (t.unpacked) busy[b] += copy_units(m, t);
      if (t.src != t.dst && t.bytes > m.eager_limit && !sent_in_place(sub, t)) {
        (a == b ? written[a].to_this_core : written[a].to_other_cores) += m.coherence_units(t.bytes);
        written[a].bytes += static_cast<double>(t.bytes);
      }
      if (a == b) continue;  // same core (or a local copy): no ring, no link
      cross_pairs += 1;
      cross_packets += m.packets(t.bytes);
      ring[a * cores + b] += ring_bytes_there(m, t.bytes);
      if (t.bytes > m.eager_limit) ring[b * cores + a] += kSendDone;
    }
    for (std::size_t k = 0; k < all.size(); ++k) {
      const std::size_t core = sub.members[k] % cores;
      busy[core] += process_work(m, all[k]);
      walked[core] += expected_receives_passed(all[k]);
      posted[core] += all[k].receives;
    }
  }
  for (std::size_t k = 0; k < cores; ++k)
    busy[k] += match_per_entry(m, posted[k]) * walked[k] + coherence_charge(m, written[k]);
  c.max_send_receive = *std::max_element(busy.begin(), busy.end());
  if (cross_pairs > 0) {
    c.link_congestion = cross_packets / cross_pairs * std::ceil(cross_pairs / m.bisection);
    const std::uint64_t fullest = *std::max_element(ring.begin(), ring.end());
    c.synchronisation = m.latency * (1 + 2 * static_cast<double>(fullest / m.ring_bytes));
  }
  c.communication = c.max_send_receive + c.link_congestion + c.synchronisation;
  return c;
}

}  // namespace

std::vector<SendReceive> send_receive_times(const Machine& machine, const Submachine& submachine) {
  const double h = machine.submachine(submachine.shape, submachine.members.size()).latency;
  std::vector<SendReceive> out;
  for (const Traffic& t : traffic(machine, submachine)) out.push_back(fig1(machine, h, t));
  return out;
}

SuperstepCost cost(const Machine& machine, const Superstep& step) {
  SuperstepCost c;
  switch (machine.variant) {
    case ModelVariant::paper:
      c = paper_cost(machine, step);
      break;
    case ModelVariant::calibrated:
      c = calibrated_cost(machine, step);
      break;
    case ModelVariant::ring_sync:
      c = ring_sync_cost(machine, step);
      break;
  }
  c.computation = computation_units(machine, step);
  return c;
}

AlgorithmCost cost(const Machine& machine, const Algorithm& algorithm) {
  AlgorithmCost out;
  for (const Superstep& step : algorithm) {
    out.steps.push_back(cost(machine, step));
    out.communication += out.steps.back().communication;
    out.computation += out.steps.back().computation;
  }
  return out;
}

}  // namespace switchyard::model
