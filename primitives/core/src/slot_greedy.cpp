#include <algorithm>
#include <queue>

#include "slot_support.hpp"

namespace switchyard::primitives::detail {

namespace {

struct Waiting {
  std::int32_t priority;
  PacketId packet;
  // Most urgent first; among equals the lower packet id, so runs are reproducible.
  bool operator<(const Waiting& o) const { return priority != o.priority ? priority < o.priority : packet > o.packet; }
};

// The packets waiting for each arc: one heap per non-empty arc, drawn from a
// pool, so a complete graph's millions of arcs cost an index each, not a heap each.
class ArcQueues {
 public:
  ArcQueues(const VirtualNetwork& g)
      : g_(g), heap_of_(static_cast<std::size_t>(g.arcs()), -1), active_arcs_(static_cast<std::size_t>(g.size())) {}

  void push(Node from, Node to, Waiting w) {
    const std::int64_t arc = g_.arc(from, to);
    std::int32_t& h = heap_of_[arc];
    if (h < 0) {
      if (free_.empty()) free_.push_back(static_cast<std::int32_t>(pool_.size())), pool_.emplace_back();
      h = free_.back();
      free_.pop_back();
      if (active_arcs_[from].empty()) active_nodes_.push_back(from);
      active_arcs_[from].push_back({to, arc});
    }
    pool_[h].push_back(w);
    std::push_heap(pool_[h].begin(), pool_[h].end());
  }
  const Waiting& top(std::int64_t arc) const { return pool_[heap_of_[arc]].front(); }
  Waiting pop(std::int64_t arc) {
    auto& heap = pool_[heap_of_[arc]];
    std::pop_heap(heap.begin(), heap.end());
    const Waiting w = heap.back();
    heap.pop_back();
    if (heap.empty()) free_.push_back(heap_of_[arc]), heap_of_[arc] = -1;
    return w;
  }
  bool empty(std::int64_t arc) const { return heap_of_[arc] < 0; }

  struct OutArc {
    Node to;
    std::int64_t arc;
  };
  // Nodes with a waiting packet, each with its non-empty arcs; emptied arcs and
  // nodes are dropped here, lazily, once per slot.
  std::vector<Node>& active_nodes() {
    std::erase_if(active_nodes_, [this](Node v) {
      std::erase_if(active_arcs_[v], [this](const OutArc& a) { return empty(a.arc); });
      return active_arcs_[v].empty();
    });
    return active_nodes_;
  }
  std::span<const OutArc> arcs_of(Node v) const { return active_arcs_[v]; }

 private:
  const VirtualNetwork& g_;
  std::vector<std::int32_t> heap_of_;
  std::vector<std::vector<Waiting>> pool_;
  std::vector<std::int32_t> free_;
  std::vector<std::vector<OutArc>> active_arcs_;
  std::vector<Node> active_nodes_;
};

// One slot's link usage under the link model.
class SlotPorts {
 public:
  SlotPorts(const VirtualNetwork& g, LinkModel m)
      : g_(g),
        model_(m),
        sent_(static_cast<std::size_t>(g.size()), -1),
        received_(sent_),
        arc_used_(static_cast<std::size_t>(g.arcs()), -1) {}
  bool free(std::int32_t slot, Node from, Node to, std::int64_t arc) const {
    if (arc_used_[arc] == slot) return false;
    if (model_.duplex == Duplex::half && arc_used_[g_.arc(to, from)] == slot) return false;
    return model_.ports == Ports::all_port || (sent_[from] != slot && received_[to] != slot);
  }
  void use(std::int32_t slot, Node from, Node to, std::int64_t arc) {
    arc_used_[arc] = slot, sent_[from] = slot, received_[to] = slot;
  }

 private:
  const VirtualNetwork& g_;
  LinkModel model_;
  std::vector<std::int32_t> sent_, received_, arc_used_;
};

}  // namespace

SlotSchedule greedy_schedule(const VirtualNetwork& network, LinkModel model, const PacketSet& packets,
                             const Forwarding& forwarding) {
  ArcQueues queues(network);
  SlotPorts ports(network, model);
  std::vector<Hop> hops;
  auto arrive = [&](PacketId p, Node at) {
    hops.clear();
    forwarding.hops(p, at, hops);
    for (const Hop& h : hops) queues.push(at, h.to, {h.priority, p});
  };
  for (PacketId p = 0; p < packets.size(); ++p) {
    for (Node o : packets.origins(p)) arrive(p, o);
  }
  SlotSchedule schedule;
  std::vector<Transmission> moved;
  std::vector<std::pair<std::int32_t, Node>> order;
  std::vector<ArcQueues::OutArc> candidates;
  const bool one_port = model.ports == Ports::one_port;
  for (std::int32_t slot = 0;; ++slot) {
    auto& nodes = queues.active_nodes();
    if (nodes.empty()) break;
    // One-port: the most urgent senders first, so they get the receivers they
    // need. All-port: every free arc sends, in any order.
    order.clear();
    for (Node v : nodes) {
      std::int32_t urgency = 0;
      if (one_port) {
        for (const auto& a : queues.arcs_of(v)) urgency = std::max(urgency, queues.top(a.arc).priority);
      }
      order.push_back({-urgency, v});
    }
    if (one_port) std::sort(order.begin(), order.end());
    moved.clear();
    for (const auto& [neg, v] : order) {
      candidates.assign(queues.arcs_of(v).begin(), queues.arcs_of(v).end());
      if (one_port) {
        std::sort(candidates.begin(), candidates.end(),
                  [&](const auto& a, const auto& b) { return queues.top(b.arc) < queues.top(a.arc); });
      }
      for (const auto& a : candidates) {
        if (!ports.free(slot, v, a.to, a.arc)) continue;
        ports.use(slot, v, a.to, a.arc);
        moved.push_back({v, a.to, queues.pop(a.arc).packet});
        if (one_port) break;
      }
    }
    for (const Transmission& t : moved) schedule.add(slot, t);
    for (const Transmission& t : moved) arrive(t.packet, t.to);
  }
  return schedule;
}

}  // namespace switchyard::primitives::detail
