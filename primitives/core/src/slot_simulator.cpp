#include "switchyard/primitives/slot_simulator.hpp"

#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

namespace {

// State beyond this is refused up front: the machine has 24 GiB shared by several jobs.
constexpr std::int64_t kMaxStateBytes = std::int64_t{4} << 30;

std::string describe(std::int32_t slot, const Transmission& t) {
  return "slot " + std::to_string(slot) + ": node " + std::to_string(t.from) + " -> node " + std::to_string(t.to) +
         " (packet " + std::to_string(t.packet) + ")";
}

}  // namespace

// Per packet, what a node holds: a copying packet with several destinations
// has one holder bit per node; a routed packet (one destination) has one
// location; a combining packet has one contribution count per node.
struct SlotSimulator::State {
  const VirtualNetwork& network;
  LinkModel model;
  const PacketSet& packets;
  std::int32_t slot = 0;
  std::int64_t transmissions = 0;
  std::vector<std::int64_t> index;  // packet -> its bitset / count block, or -1 (routed)
  std::vector<Node> location;  // routed packets: where it is; -1 while in a link
  std::vector<std::uint64_t> holders;  // copying packets with several destinations: N bits each
  std::vector<std::uint32_t> counts;  // combining packets: N counts each
  std::vector<std::int32_t> last_send, last_receive, arc_used;  // the slot a port or arc was last used in
  struct Arrival {
    Transmission t;
    std::uint32_t amount;
  };
  std::vector<Arrival> arrivals;  // of the slot being run, applied at its end

  std::int64_t words() const { return (network.size() + 63) / 64; }
  bool holds_bit(std::int64_t block, Node v) const { return holders[block * words() + v / 64] >> (v % 64) & 1; }
  void set_bit(std::int64_t block, Node v) { holders[block * words() + v / 64] |= std::uint64_t{1} << (v % 64); }
  std::uint32_t& count(std::int64_t block, Node v) { return counts[block * network.size() + v]; }

  State(const VirtualNetwork& g, LinkModel m, const PacketSet& p) : network(g), model(m), packets(p) {}
  void allocate();
  void check_link(const Transmission& t);
  void take(const Transmission& t);
  void land(const Arrival& a);
};

void SlotSimulator::State::allocate() {
  const Node n = network.size();
  if (packets.nodes() != n) {
    throw InvalidArgument("SlotSimulator: the packets are over " + std::to_string(packets.nodes()) +
                          " nodes, the network " + network.name() + " has " + std::to_string(n));
  }
  std::int64_t blocks = 0;
  index.assign(static_cast<std::size_t>(packets.size()), -1);
  for (PacketId p = 0; p < packets.size(); ++p) {
    if (packets.combining() || packets.destinations(p).size() > 1) index[p] = blocks++;
  }
  const std::int64_t block_bytes = packets.combining() ? std::int64_t{n} * 4 : words() * 8;
  const std::int64_t bytes = blocks * block_bytes + std::int64_t{packets.size()} * 12 + network.arcs() * 4;
  if (bytes > kMaxStateBytes) {
    throw InvalidArgument("SlotSimulator: " + std::to_string(packets.size()) + " packets on " + std::to_string(n) +
                          " nodes need " + std::to_string(bytes >> 20) + " MiB of state, more than the " +
                          std::to_string(kMaxStateBytes >> 20) + " MiB allowed");
  }
  (packets.combining() ? counts.assign(static_cast<std::size_t>(blocks * n), 0)
                       : holders.assign(static_cast<std::size_t>(blocks * words()), 0));
  location.assign(static_cast<std::size_t>(packets.size()), -1);
  for (PacketId p = 0; p < packets.size(); ++p) {
    for (Node o : packets.origins(p)) {
      if (packets.combining())
        count(index[p], o) = 1;
      else if (index[p] >= 0)
        set_bit(index[p], o);
      else
        location[p] = o;
    }
  }
  last_send.assign(static_cast<std::size_t>(n), -1);
  last_receive.assign(static_cast<std::size_t>(n), -1);
  arc_used.assign(static_cast<std::size_t>(network.arcs()), -1);
}

// The link exists and the link model allows one more packet on it this slot.
void SlotSimulator::State::check_link(const Transmission& t) {
  if (t.packet < 0 || t.packet >= packets.size()) throw IllegalSchedule(describe(slot, t) + ": no such packet");
  const std::int64_t arc = network.arc(t.from, t.to);
  if (arc < 0) throw IllegalSchedule(describe(slot, t) + ": no such link in " + network.name());
  if (arc_used[arc] == slot) throw IllegalSchedule(describe(slot, t) + ": the link already carries a packet this way");
  if (model.duplex == Duplex::half && arc_used[network.arc(t.to, t.from)] == slot) {
    throw IllegalSchedule(describe(slot, t) + ": half duplex, and the link carries a packet the other way");
  }
  arc_used[arc] = slot;
  if (model.ports == Ports::one_port) {
    if (last_send[t.from] == slot)
      throw IllegalSchedule(describe(slot, t) + ": one-port, and the sender already sends");
    if (last_receive[t.to] == slot) {
      throw IllegalSchedule(describe(slot, t) + ": one-port, and the receiver already receives");
    }
    last_send[t.from] = slot;
    last_receive[t.to] = slot;
  }
}

// The sender gives what it holds at the start of the slot: a copy, a routed
// packet, or all its contributions of a combining packet.
void SlotSimulator::State::take(const Transmission& t) {
  const std::int64_t block = index[t.packet];
  std::uint32_t amount = 1;
  if (packets.combining()) {
    amount = count(block, t.from);
    if (amount == 0) {
      throw IllegalSchedule(describe(slot, t) +
                            ": the sender holds no contribution to the packet (none yet, or it "
                            "already handed them over: sending again would count them twice)");
    }
    count(block, t.from) = 0;
  } else if (block >= 0) {
    if (!holds_bit(block, t.from)) throw IllegalSchedule(describe(slot, t) + ": the sender does not hold the packet");
  } else {
    if (location[t.packet] != t.from) {
      throw IllegalSchedule(
          describe(slot, t) + ": the sender does not hold the packet (it is " +
          (location[t.packet] < 0 ? std::string("in a link") : "at node " + std::to_string(location[t.packet])) + ")");
    }
    location[t.packet] = -1;
  }
  arrivals.push_back({t, amount});
}

void SlotSimulator::State::land(const Arrival& a) {
  const std::int64_t block = index[a.t.packet];
  if (packets.combining())
    count(block, a.t.to) += a.amount;
  else if (block >= 0)
    set_bit(block, a.t.to);
  else
    location[a.t.packet] = a.t.to;
}

SlotSimulator::SlotSimulator(const VirtualNetwork& network, LinkModel model, const PacketSet& packets)
    : state_(std::make_unique<State>(network, model, packets)) {
  state_->allocate();
}

SlotSimulator::~SlotSimulator() = default;

void SlotSimulator::run_slot(std::span<const Transmission> slot) {
  State& s = *state_;
  s.arrivals.clear();
  for (const Transmission& t : slot) {
    s.check_link(t);
    s.take(t);
  }
  for (const auto& a : s.arrivals) s.land(a);
  s.transmissions += static_cast<std::int64_t>(slot.size());
  ++s.slot;
}

std::int32_t SlotSimulator::slots_run() const noexcept { return state_->slot; }

SimulationResult SlotSimulator::finish() const {
  State& s = *state_;
  const PacketSet& packets = s.packets;
  for (PacketId p = 0; p < packets.size(); ++p) {
    for (Node d : packets.destinations(p)) {
      const std::int64_t block = s.index[p];
      const bool done = packets.combining() ? s.count(block, d) == packets.origins(p).size()
                        : block >= 0        ? s.holds_bit(block, d)
                                            : s.location[p] == d;
      if (!done) {
        throw IllegalSchedule("after " + std::to_string(s.slot) + " slots: node " + std::to_string(d) +
                              (packets.combining()
                                   ? " holds " + std::to_string(s.count(block, d)) + " of the " +
                                         std::to_string(packets.origins(p).size()) + " contributions to packet "
                                   : " lacks packet ") +
                              std::to_string(p));
      }
    }
  }
  return {s.slot, s.transmissions, packets.deliveries()};
}

SimulationResult simulate(const VirtualNetwork& network, LinkModel model, const PacketSet& packets,
                          const SlotSchedule& schedule) {
  SlotSimulator sim(network, model, packets);
  for (std::int32_t t = 0; t < schedule.slots(); ++t) sim.run_slot(schedule.slot(t));
  return sim.finish();
}

}  // namespace switchyard::primitives
