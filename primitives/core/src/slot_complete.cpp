// The complete graph's schedules: what the real machine (one-port full duplex)
// and the all-port complete graph do without forwarding.
#include <algorithm>

#include "slot_support.hpp"

namespace switchyard::primitives::detail {

namespace {

// Every (from, to, packet) of the task: one per destination of a copying packet,
// one per origin of a combining one.
std::vector<Transmission> direct_pairs(const PacketSet& packets) {
  std::vector<Transmission> out;
  out.reserve(static_cast<std::size_t>(packets.deliveries()));
  for (PacketId p = 0; p < packets.size(); ++p) {
    for (Node o : packets.origins(p)) {
      for (Node d : packets.destinations(p)) out.push_back({o, d, p});
    }
  }
  return out;
}

}  // namespace

SlotSchedule direct_schedule(const TaskInstance& task, LinkModel model) {
  auto pairs = direct_pairs(task.packets);
  SlotScheduleBuilder b;
  if (model.duplex == Duplex::half) {
    // A link used both ways: the direction from the larger node waits a slot.
    std::vector<std::pair<Node, Node>> links;
    links.reserve(pairs.size());
    for (const auto& t : pairs) links.push_back({t.from, t.to});
    std::sort(links.begin(), links.end());
    for (const auto& t : pairs) {
      const bool both = std::binary_search(links.begin(), links.end(), std::pair{t.to, t.from});
      b.add(both && t.from > t.to ? 1 : 0, t);
    }
  } else {
    for (const auto& t : pairs) b.add(0, t);
  }
  return std::move(b).build();
}

SlotSchedule sequential_scatter(const TaskInstance& task) {
  SlotSchedule s;
  for (PacketId p = 0; p < task.packets.size(); ++p) {
    s.add(p, {task.packets.origins(p)[0], task.packets.destinations(p)[0], p});
  }
  return s;
}

SlotSchedule shifted_exchange(const TaskInstance& task, LinkModel model) {
  const PacketSet& packets = task.packets;
  const Node n = packets.nodes();
  // Personalized packets (TE, PMNS) are found by (origin, destination): they
  // are added origin-major with destinations increasing; broadcast packets
  // (MNB) by origin.
  std::vector<std::int64_t> first(static_cast<std::size_t>(n) + 1, -1);
  for (PacketId p = packets.size() - 1; p >= 0; --p) first[packets.origins(p)[0]] = p;
  const bool split = model.duplex == Duplex::half && n % 2 == 0;
  SlotScheduleBuilder b;
  for (Node v = 0; v < n; ++v) {
    if (first[v] < 0) continue;
    for (Node t = 1; t < n; ++t) {
      const Node to = (v + t) % n;
      const PacketId p = packets.destinations(static_cast<PacketId>(first[v])).size() > 1
                             ? static_cast<PacketId>(first[v])
                             : static_cast<PacketId>(first[v] + (to < v ? to : to - 1));
      // Slots 0..N-2; with the split, the second half of slot N/2 - 1 and every later slot move up one.
      const std::int32_t slot = t - 1 + (split && (t > n / 2 || (t == n / 2 && v >= n / 2)) ? 1 : 0);
      b.add(slot, {v, to, p});
    }
  }
  return std::move(b).build();
}

}  // namespace switchyard::primitives::detail
