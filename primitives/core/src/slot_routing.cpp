#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "slot_support.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/primitives/binomial_tree.hpp"

namespace switchyard::primitives::detail {

namespace {

// Heap-ordered K-ary tree: depth of v.
std::int32_t tree_depth(Node v, int k) {
  std::int32_t d = 0;
  for (; v > 0; v = (v - 1) / k) ++d;
  return d;
}

// Hypercube: the differing dimensions in cyclic order from `to mod d`.
Node hypercube_next(Node at, Node to, int d) {
  const auto diff = static_cast<std::uint32_t>(at ^ to);
  const int start = static_cast<int>(static_cast<std::uint32_t>(to) % static_cast<std::uint32_t>(d));
  const std::uint32_t rotated = (diff >> start) | (start ? diff << (d - start) : 0u);
  const int bit = (std::countr_zero(rotated & ((1u << d) - 1)) + start) % d;
  return at ^ (Node{1} << bit);
}

// Torus: dimension order from `to mod dims`, shorter way round (ties: upwards).
Node torus_next(Node at, Node to, std::span<const Node> sides) {
  const int dims = static_cast<int>(sides.size());
  std::vector<Node> strides(sides.size());
  Node stride = 1;
  for (int i = 0; i < dims; ++i) strides[i] = stride, stride *= sides[i];
  for (int j = 0; j < dims; ++j) {
    const int i = (j + to % dims) % dims;
    const Node a = (at / strides[i]) % sides[i], b = (to / strides[i]) % sides[i];
    if (a == b) continue;
    const Node up = (b - a + sides[i]) % sides[i];
    const Node step = up <= sides[i] - up ? 1 : sides[i] - 1;
    return at - a * strides[i] + ((a + step) % sides[i]) * strides[i];
  }
  return at;
}

}  // namespace

Router::Router(const VirtualNetwork& network) : network_(network) {
  if (network.kind() != NetworkKind::graph) return;
  const Node n = network.size();
  if (n > kMaxTableNodes) {
    throw InvalidArgument(network.name() +
                          ": routing packets on a graph from a file needs an all-pairs table, "
                          "limited to " +
                          std::to_string(kMaxTableNodes) + " nodes; this one has " + std::to_string(n));
  }
  next_.assign(static_cast<std::size_t>(n) * n, -1);
  dist_.assign(static_cast<std::size_t>(n) * n, 0);
  for (Node to = 0; to < n; ++to) {
    // BFS from the destination: the next hop of `at` is its BFS parent.
    const RootedTree t = bfs_tree(network, to);
    const auto d = network.distances_from(to);
    for (Node at = 0; at < n; ++at) {
      next_[static_cast<std::size_t>(to) * n + at] = t.parent[at];
      dist_[static_cast<std::size_t>(to) * n + at] = d[at];
    }
  }
}

Node Router::next_hop(Node at, Node to) const {
  switch (network_.kind()) {
    case NetworkKind::complete:
      return to;
    case NetworkKind::hypercube:
      return hypercube_next(at, to, network_.dimension());
    case NetworkKind::torus:
      return torus_next(at, to, network_.sides());
    case NetworkKind::tree: {
      // Up to the common ancestor, then down: `to`'s ancestor one level below `at`, if `at` is above `to`.
      const int k = network_.arity();
      const std::int32_t da = tree_depth(at, k);
      Node x = to;
      for (std::int32_t dx = tree_depth(to, k); dx > da + 1; --dx) x = (x - 1) / k;
      return x > 0 && (x - 1) / k == at && tree_depth(x, k) == da + 1 ? x : (at - 1) / k;
    }
    case NetworkKind::graph:
      return next_[static_cast<std::size_t>(to) * network_.size() + at];
  }
  return to;
}

std::int32_t Router::distance(Node from, Node to) const {
  switch (network_.kind()) {
    case NetworkKind::complete:
      return from == to ? 0 : 1;
    case NetworkKind::hypercube:
      return std::popcount(static_cast<std::uint32_t>(from ^ to));
    case NetworkKind::torus: {
      std::int32_t d = 0;
      for (Node side : network_.sides()) {
        const Node a = from % side, b = to % side;
        d += std::min((a - b + side) % side, (b - a + side) % side);
        from /= side, to /= side;
      }
      return d;
    }
    case NetworkKind::tree: {
      const int k = network_.arity();
      std::int32_t d = 0;
      std::int32_t da = tree_depth(from, k), db = tree_depth(to, k);
      for (; da > db; --da, ++d) from = (from - 1) / k;
      for (; db > da; --db, ++d) to = (to - 1) / k;
      for (; from != to; d += 2) from = (from - 1) / k, to = (to - 1) / k;
      return d;
    }
    case NetworkKind::graph:
      return dist_[static_cast<std::size_t>(to) * network_.size() + from];
  }
  return 0;
}

RootedTree bfs_tree(const VirtualNetwork& network, Node root) {
  const Node n = network.size();
  RootedTree t;
  t.root = root;
  t.parent.assign(static_cast<std::size_t>(n), -1);
  t.order.reserve(static_cast<std::size_t>(n));
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  seen[root] = true;
  t.order.push_back(root);
  for (std::size_t i = 0; i < t.order.size(); ++i) {
    for (Node u : network.neighbours(t.order[i])) {
      if (!seen[u]) seen[u] = true, t.parent[u] = t.order[i], t.order.push_back(u);
    }
  }
  // Children CSR: a counting sort of the nodes by parent keeps them increasing.
  t.child_begin.assign(static_cast<std::size_t>(n) + 1, 0);
  for (Node v = 0; v < n; ++v) {
    if (t.parent[v] >= 0) ++t.child_begin[t.parent[v] + 1];
  }
  for (Node v = 0; v < n; ++v) t.child_begin[v + 1] += t.child_begin[v];
  t.children.resize(static_cast<std::size_t>(t.child_begin[n]));
  std::vector<std::int64_t> fill(t.child_begin.begin(), t.child_begin.end() - 1);
  for (Node v = 0; v < n; ++v) {
    if (t.parent[v] >= 0) t.children[fill[t.parent[v]]++] = v;
  }
  return t;
}

SlotSchedule reversed(const SlotSchedule& schedule) {
  SlotSchedule out;
  out.reserve(schedule.transmissions().size());
  const std::int32_t slots = schedule.slots();
  for (std::int32_t t = slots - 1; t >= 0; --t) {
    for (const Transmission& x : schedule.slot(t)) out.add(slots - 1 - t, {x.to, x.from, x.packet});
  }
  return out;
}

void RoutedForwarding::hops(PacketId packet, Node at, std::vector<Hop>& out) const {
  const Node to = packets_.destinations(packet)[0];
  if (at != to) out.push_back({router_.next_hop(at, to), router_.distance(at, to)});
}

}  // namespace switchyard::primitives::detail
