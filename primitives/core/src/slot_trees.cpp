#include <algorithm>
#include <bit>
#include <stdexcept>

#include "slot_support.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/primitives/binomial_tree.hpp"

namespace switchyard::primitives::detail {

namespace {

// Marks the nodes whose subtree holds a target (the pruned tree), leaves to root.
std::vector<bool> needed_nodes(const RootedTree& tree, std::span<const Node> targets) {
  std::vector<bool> needed(tree.parent.size(), false);
  for (Node t : targets) needed[t] = true;
  for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
    if (needed[*it] && tree.parent[*it] >= 0) needed[tree.parent[*it]] = true;
  }
  return needed;
}

}  // namespace

SlotSchedule tree_broadcast(const RootedTree& tree, LinkModel model, PacketId packet, std::span<const Node> targets) {
  const auto needed = needed_nodes(tree, targets);
  const std::size_t n = tree.parent.size();
  // finish[v]: slots the subtree of v needs once v holds the packet.
  std::vector<std::int32_t> finish(n, 0);
  std::vector<std::vector<Node>> served(n);  // v's needed children in sending order
  for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
    const Node v = *it;
    if (!needed[v]) continue;
    auto& kids = served[v];
    for (auto c = tree.child_begin[v]; c < tree.child_begin[v + 1]; ++c) {
      if (needed[tree.children[c]]) kids.push_back(tree.children[c]);
    }
    std::stable_sort(kids.begin(), kids.end(), [&](Node a, Node b) { return finish[a] > finish[b]; });
    for (std::size_t i = 0; i < kids.size(); ++i) {
      const std::int32_t delay = model.ports == Ports::one_port ? static_cast<std::int32_t>(i) : 0;
      finish[v] = std::max(finish[v], delay + 1 + finish[kids[i]]);
    }
  }
  SlotScheduleBuilder b;
  std::vector<std::int32_t> has(n, -1);  // the first slot in which v can send
  has[tree.root] = 0;
  for (Node v : tree.order) {
    if (!needed[v]) continue;
    for (std::size_t i = 0; i < served[v].size(); ++i) {
      const std::int32_t slot = has[v] + (model.ports == Ports::one_port ? static_cast<std::int32_t>(i) : 0);
      b.add(slot, {v, served[v][i], packet});
      has[served[v][i]] = slot + 1;
    }
  }
  return std::move(b).build();
}

SlotSchedule binomial_broadcast(const VirtualNetwork& network, Node root, PacketId packet,
                                std::span<const Node> targets) {
  SlotScheduleBuilder b;
  if (network.kind() == NetworkKind::complete) {
    // Relative rank i is participants[i]: the root, then the targets.
    std::vector<Node> participants{root};
    participants.insert(participants.end(), targets.begin(), targets.end());
    const auto n = static_cast<std::int64_t>(participants.size());
    for (std::int64_t v = 0; v < n; ++v) {
      for_each_binomial_child(v, n, [&](std::int64_t child, int slot) {
        b.add(slot, {participants[v], participants[child], packet});
      });
    }
    return std::move(b).build();
  }
  if (network.kind() != NetworkKind::hypercube)
    throw InvalidArgument("binomial_broadcast: complete graph or hypercube only");
  // Keep the branches that lead to a target: mark each target's relative rank
  // and its ancestors (v's parent is v without its highest bit).
  const std::int64_t n = network.size();
  std::vector<bool> needed(static_cast<std::size_t>(n), false);
  needed[0] = true;
  for (Node t : targets) {
    for (std::int64_t v = t ^ root; !needed[v]; v = binomial_parent(v)) needed[v] = true;
  }
  for (std::int64_t v = 0; v < n; ++v) {
    if (!needed[v]) continue;
    for_each_binomial_child(v, n, [&](std::int64_t child, int slot) {
      if (needed[child]) b.add(slot, {static_cast<Node>(v ^ root), static_cast<Node>(child ^ root), packet});
    });
  }
  return std::move(b).build();
}

TreeForwarding::TreeForwarding(const VirtualNetwork& network, const PacketSet& packets, TreeShape shape)
    : network_(network), packets_(packets), shape_(shape) {
  if (shape != TreeShape::bfs) return;
  const std::size_t n = static_cast<std::size_t>(network.size());
  parent_.resize(n * static_cast<std::size_t>(packets.size()));
  height_.assign(parent_.size(), -1);
  for (PacketId p = 0; p < packets.size(); ++p) {
    const RootedTree tree = bfs_tree(network, packets.origins(p)[0]);
    const auto needed = needed_nodes(tree, packets.destinations(p));
    std::int32_t* height = height_.data() + static_cast<std::size_t>(p) * n;
    std::copy(tree.parent.begin(), tree.parent.end(), parent_.begin() + static_cast<std::ptrdiff_t>(p * n));
    for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
      if (!needed[*it]) continue;
      height[*it] = std::max(height[*it], 0);
      if (tree.parent[*it] >= 0) height[tree.parent[*it]] = std::max(height[tree.parent[*it]], height[*it] + 1);
    }
  }
}

void TreeForwarding::hops(PacketId packet, Node at, std::vector<Hop>& out) const {
  const Node origin = packets_.origins(packet)[0];
  const std::int64_t n = network_.size();
  if (shape_ != TreeShape::bfs) {
    if (network_.kind() == NetworkKind::hypercube) {
      // Each origin's tree has its dimensions rotated by origin mod d (relative
      // bit t is cube dimension (t - k) mod d), so the trees of many origins
      // spread over all dimensions instead of all starting on dimension 0.
      const int d = network_.dimension();
      const int k = d == 0 || shape_ == TreeShape::binomial ? 0 : origin % d;
      const auto x = static_cast<std::uint32_t>(at ^ origin);
      const auto mask = (std::uint32_t{1} << d) - 1;
      const std::int64_t v = k == 0 ? x : ((x << k) | (x >> (d - k))) & mask;
      for_each_binomial_child(v, n, [&](std::int64_t child, int t) {
        out.push_back({at ^ (Node{1} << ((t - k + d) % d)), binomial_slots(n) - binomial_receive_slot(child)});
      });
      return;
    }
    const std::int64_t v = relative_rank(at, origin, n);
    for_each_binomial_child(v, n, [&](std::int64_t child, int) {
      // The child receives in slot highbit(child); its subtree is done by slot binomial_slots(n) - 1.
      out.push_back(
          {static_cast<Node>(absolute_rank(child, origin, n)), binomial_slots(n) - binomial_receive_slot(child)});
    });
    return;
  }
  const std::size_t base = static_cast<std::size_t>(packet) * static_cast<std::size_t>(n);
  for (Node w : network_.neighbours(at)) {
    if (parent_[base + w] == at && height_[base + w] >= 0) out.push_back({w, height_[base + w] + 1});
  }
}

}  // namespace switchyard::primitives::detail
