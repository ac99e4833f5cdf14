#include <algorithm>
#include <bit>
#include <optional>
#include <string>

#include "slot_support.hpp"

namespace switchyard::primitives::detail {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

// Distances from each packet's single end (the origin of a copying packet,
// the destination of a combining one) to its other ends: closed forms on the
// regular kinds; on graphs from files one BFS per distinct end, remembered
// while consecutive packets share it, skipped (-1) where the BFSs would cost
// more than a bound is worth.
class EndDistances {
 public:
  EndDistances(const VirtualNetwork& g, const PacketSet& packets) : g_(g) {
    if (g.kind() != NetworkKind::graph) {
      router_.emplace(g);
      return;
    }
    std::int64_t ends = 0;
    Node last = -1;
    for (PacketId p = 0; p < packets.size(); ++p) {
      const Node e = packets.combining() ? packets.destinations(p)[0] : packets.origins(p)[0];
      ends += e != last, last = e;
    }
    affordable_ = ends * (g.arcs() + g.size()) <= (std::int64_t{1} << 30);
  }
  // Largest distance from `end` to any of `others`, or -1 when not affordable.
  std::int32_t farthest(Node end, std::span<const Node> others) {
    std::int32_t best = 0;
    if (router_) {
      for (Node v : others) best = std::max(best, router_->distance(end, v));
      return best;
    }
    if (!affordable_) return -1;
    if (end != cached_) dist_ = g_.distances_from(end), cached_ = end;
    for (Node v : others) best = std::max(best, dist_[v]);
    return best;
  }

 private:
  const VirtualNetwork& g_;
  std::optional<Router> router_;
  bool affordable_ = false;
  Node cached_ = -1;
  std::vector<std::int32_t> dist_;
};

struct Term {
  std::int64_t slots;
  std::string name;
};

// Whether two neighbours must each get something to the other: in one slot
// only their link could carry both, which half duplex forbids (any other
// route takes two slots).
bool exchanges_across_a_link(const VirtualNetwork& g, const PacketSet& packets) {
  std::vector<std::pair<Node, Node>> pairs;
  for (PacketId p = 0; p < packets.size(); ++p) {
    for (Node o : packets.origins(p)) {
      for (Node d : packets.destinations(p)) {
        if (g.adjacent(o, d)) pairs.push_back({o, d});
      }
    }
  }
  std::sort(pairs.begin(), pairs.end());
  for (auto [o, d] : pairs) {
    if (std::binary_search(pairs.begin(), pairs.end(), std::pair{d, o})) return true;
  }
  return false;
}

}  // namespace

SlotBound task_lower_bound(const VirtualNetwork& network, LinkModel model, const TaskInstance& task) {
  const PacketSet& packets = task.packets;
  const Node n = network.size();
  const bool one_port = model.ports == Ports::one_port;
  std::vector<std::int64_t> sends(static_cast<std::size_t>(n), 0), receives(static_cast<std::size_t>(n), 0);
  std::int64_t hops = 0, distance = 0, doubling = 0;
  EndDistances ends(network, packets);
  for (PacketId p = 0; p < packets.size(); ++p) {
    const auto many = packets.combining() ? packets.origins(p) : packets.destinations(p);
    const Node end = packets.combining() ? packets.destinations(p)[0] : packets.origins(p)[0];
    const std::int32_t far = ends.farthest(end, many);
    distance = std::max<std::int64_t>(distance, far);
    // A routed packet crosses at least its distance; otherwise every destination
    // receives (every contribution leaves its origin) at least once.
    hops += many.size() == 1 && far > 0 ? far : static_cast<std::int64_t>(many.size());
    doubling = std::max<std::int64_t>(doubling, std::bit_width(static_cast<std::uint64_t>(many.size())));
    for (Node v : many) ++(packets.combining() ? sends[v] : receives[v]);
    ++(packets.combining() ? receives[end] : sends[end]);
  }
  std::vector<Term> terms{{distance, "largest origin-destination distance"}};
  if (one_port) terms.push_back({doubling, "one-port doubling ceil(log2(k+1)) for k destinations"});
  for (Node v = 0; v < n; ++v) {
    const std::int64_t ports = one_port ? 1 : network.degree(v);
    terms.push_back({ceil_div(receives[v], ports),
                     one_port ? "receptions at a node, one per slot" : "receptions at a node over its links"});
    terms.push_back({ceil_div(sends[v], ports),
                     one_port ? "emissions at a node, one per slot" : "emissions at a node over its links"});
    if (!one_port && model.duplex == Duplex::half) {
      terms.push_back({ceil_div(sends[v] + receives[v], ports), "half-duplex traffic at a node over its links"});
    }
  }
  const std::int64_t capacity = one_port ? n : model.duplex == Duplex::full ? network.arcs() : network.links();
  terms.push_back({ceil_div(hops, capacity), "total hops over the links' capacity per slot"});
  const auto best =
      std::max_element(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.slots < b.slots; });
  if (best->slots < 2 && model.duplex == Duplex::half && exchanges_across_a_link(network, packets)) {
    return {BoundKind::lower, 2, "half duplex: two neighbours send to each other"};
  }
  return {BoundKind::lower, best->slots, best->name};
}

}  // namespace switchyard::primitives::detail
