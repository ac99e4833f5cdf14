#include "switchyard/primitives/tree_forwarding.hpp"

#include <algorithm>

namespace switchyard::primitives {

PacketId GreedyTreeForwarding::Queue::pop() noexcept {
  const PacketId p = items[head++];
  if (head == items.size()) {
    items.clear();
    head = 0;
  } else if (head > 64 && head * 2 > items.size()) {
    items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  }
  return p;
}

GreedyTreeForwarding::GreedyTreeForwarding(Node nodes, const EdgeDisjointTrees& trees, Duplex duplex)
    : duplex_(duplex), nodes_(nodes) {
  const auto n = static_cast<std::size_t>(nodes);
  std::vector<std::int64_t> degree(trees.trees.size() * n + 1, 0);
  tree_begin_.push_back(0);
  for (std::size_t j = 0; j < trees.trees.size(); ++j) {
    for (auto [u, v] : trees.trees[j]) {
      for (auto [from, to] : {std::pair{u, v}, std::pair{v, u}}) {
        arc_from_.push_back(from);
        arc_to_.push_back(to);
        arc_tree_.push_back(static_cast<std::int32_t>(j));
        ++degree[j * n + static_cast<std::size_t>(from) + 1];
      }
    }
    tree_begin_.push_back(static_cast<std::int64_t>(arc_to_.size() / 2));
  }
  out_begin_.assign(degree.size(), 0);
  for (std::size_t i = 1; i < degree.size(); ++i) out_begin_[i] = out_begin_[i - 1] + degree[i];
  out_.assign(arc_to_.size(), 0);
  std::vector<std::int64_t> fill(out_begin_.begin(), out_begin_.end() - 1);
  for (std::size_t a = 0; a < arc_to_.size(); ++a) {
    out_[static_cast<std::size_t>(
        fill[static_cast<std::size_t>(arc_tree_[a]) * n + static_cast<std::size_t>(arc_from_[a])]++)] =
        static_cast<std::int64_t>(a);
  }
  queue_.resize(arc_to_.size());
  listed_.assign(arc_to_.size() / 2, 0);
}

void GreedyTreeForwarding::forward(PacketId packet, std::int64_t tree_node, Node came_from) {
  const auto begin = out_begin_[static_cast<std::size_t>(tree_node)];
  const auto end = out_begin_[static_cast<std::size_t>(tree_node) + 1];
  for (auto i = begin; i < end; ++i) {
    const auto a = static_cast<std::size_t>(out_[static_cast<std::size_t>(i)]);
    if (arc_to_[a] == came_from) continue;
    queue_[a].items.push_back(packet);
    ++queued_;
    if (!listed_[a / 2]) {
      listed_[a / 2] = 1;
      busy_.push_back(static_cast<std::int64_t>(a / 2));
    }
  }
}

void GreedyTreeForwarding::inject(PacketId packet, int tree, Node source) {
  forward(packet, static_cast<std::int64_t>(tree) * nodes_ + source, -1);
}

void GreedyTreeForwarding::send(std::size_t arc) {
  sent_.push_back({arc_from_[arc], arc_to_[arc], queue_[arc].pop()});
  sent_tree_.push_back(arc_tree_[arc]);
  --queued_;
}

std::span<const Transmission> GreedyTreeForwarding::step() {
  sent_.clear();
  sent_tree_.clear();
  // Link order, so that the packets arriving at a node in one slot queue onward
  // in the same order whatever order the links became busy in.
  std::sort(busy_.begin(), busy_.end());
  for (const std::int64_t link : busy_) {
    const auto up = static_cast<std::size_t>(2 * link), down = up + 1;
    if (duplex_ == Duplex::full) {
      if (!queue_[up].empty()) send(up);
      if (!queue_[down].empty()) send(down);
    } else {
      send(queue_[up].size() >= queue_[down].size() ? up : down);
    }
  }
  std::erase_if(busy_, [&](std::int64_t link) {
    const auto up = static_cast<std::size_t>(2 * link);
    const bool drained = queue_[up].empty() && queue_[up + 1].empty();
    if (drained) listed_[static_cast<std::size_t>(link)] = 0;
    return drained;
  });
  const auto n = static_cast<std::int64_t>(nodes_);
  for (std::size_t i = 0; i < sent_.size(); ++i) {
    const Transmission t = sent_[i];
    forward(t.packet, static_cast<std::int64_t>(sent_tree_[i]) * n + t.to, t.from);
  }
  return sent_;
}

}  // namespace switchyard::primitives
