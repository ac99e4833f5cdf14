#pragma once
// What the slot algorithms share (internal): routing on each network kind,
// rooted trees, the lower bounds every task obeys, and the greedy
// store-and-forward engine.
#include <cstdint>
#include <span>
#include <vector>

#include "switchyard/primitives/slot_algorithms.hpp"

namespace switchyard::primitives::detail {

// Shortest-path routing for a routed packet: the next hop from `at` towards
// `to` and the hops left. Closed forms on the regular kinds (the hypercube and
// torus start their dimension order at a dimension chosen by the destination,
// so the packets of one origin spread over all its links); an all-pairs table
// on graphs from files (refused beyond kMaxTableNodes).
class Router {
 public:
  static constexpr Node kMaxTableNodes = 4096;
  explicit Router(const VirtualNetwork& network);
  Node next_hop(Node at, Node to) const;
  std::int32_t distance(Node from, Node to) const;

 private:
  const VirtualNetwork& network_;
  std::vector<Node> next_;  // graphs: next_[to * N + at]
  std::vector<std::int32_t> dist_;  // graphs: dist_[to * N + at]
};

// A spanning tree rooted at `root`, children in increasing order.
struct RootedTree {
  Node root = 0;
  std::vector<Node> parent;  // -1 at the root
  std::vector<std::int64_t> child_begin;  // CSR over nodes
  std::vector<Node> children;
  std::vector<Node> order;  // breadth-first order, root first
};
RootedTree bfs_tree(const VirtualNetwork& network, Node root);

// The bound every algorithm of a task obeys, whatever it is: the largest
// origin-destination distance, each node's receptions and emissions over its
// port capacity per slot, all the hops over the network's capacity per slot,
// and under one-port the doubling limit ceil(log2(k + 1)) of a packet with k
// destinations (or contributions). Named after the term that dominates.
SlotBound task_lower_bound(const VirtualNetwork& network, LinkModel model, const TaskInstance& task);

// The dual of a schedule: slot t becomes slots - 1 - t and every link is
// crossed the other way. Turns a broadcast in which every node receives each
// packet once into the accumulation that combines along the same tree, and a
// scatter into a gather (the packet ids of the dual instance must match).
SlotSchedule reversed(const SlotSchedule& schedule);

// Where a copy of a packet goes next and how urgent it is: the greedy engine
// asks this when a node receives the packet (or holds it at the start).
struct Hop {
  Node to;
  std::int32_t priority;  // hops the packet still has to make along this branch: longest first
};
class Forwarding {
 public:
  virtual ~Forwarding() = default;
  virtual void hops(PacketId packet, Node at, std::vector<Hop>& out) const = 0;
};
// Routed packets along Router's shortest paths.
class RoutedForwarding final : public Forwarding {
 public:
  RoutedForwarding(const Router& router, const PacketSet& packets) : router_(router), packets_(packets) {}
  void hops(PacketId packet, Node at, std::vector<Hop>& out) const override;

 private:
  const Router& router_;
  const PacketSet& packets_;
};

// Greedy store-and-forward: every slot, every link carries the most urgent
// packet waiting for it, as far as the link model allows (one-port: a node
// serves its most urgent link whose receiver is still free). Never idles a
// link that has a packet to carry, except for port or duplex conflicts.
SlotSchedule greedy_schedule(const VirtualNetwork& network, LinkModel model, const PacketSet& packets,
                             const Forwarding& forwarding);

// Single-node broadcast of `packet` from tree.root to `targets` along `tree`,
// pruned to the branches that lead to a target. All-port: every holder sends
// to all its children in the next slot (slots = the farthest target's depth,
// the optimum). One-port: a node serves its children in decreasing order of
// the time their subtrees still need, which is optimal for the given tree.
SlotSchedule tree_broadcast(const RootedTree& tree, LinkModel model, PacketId packet, std::span<const Node> targets);

// The slot-ordered binomial tree (binomial_tree.hpp) of a one-port broadcast
// from `root` to `targets`: on the complete graph over root + targets (ceil(log2(k+1))
// slots for k targets, the one-port optimum); on a hypercube embedded with
// relative rank v xor root (at most d slots: every child is a neighbour),
// pruned to the subtrees holding a target.
SlotSchedule binomial_broadcast(const VirtualNetwork& network, Node root, PacketId packet,
                                std::span<const Node> targets);

// Broadcast forwarding for packets with several destinations: each origin's
// breadth-first tree pruned to the packet's destinations (any network), or
// the binomial tree of the origin (complete graph and hypercube, every node a
// destination; rotated_binomial: on the cube, its dimensions rotated by the
// origin), priority = the depth of the subtree still to reach.
enum class TreeShape : std::uint8_t { bfs, binomial, rotated_binomial };
class TreeForwarding final : public Forwarding {
 public:
  TreeForwarding(const VirtualNetwork& network, const PacketSet& packets, TreeShape shape);
  void hops(PacketId packet, Node at, std::vector<Hop>& out) const override;

 private:
  const VirtualNetwork& network_;
  const PacketSet& packets_;
  TreeShape shape_;
  std::vector<Node> parent_;  // BFS: parent_[p * N + v]
  std::vector<std::int32_t> height_;  // BFS: slots the subtree of v still needs, -1 if pruned
};

// Complete graph. Every (origin, destination) pair of the task sent straight
// across its link in slot 0 (half duplex: a pair whose reverse is also sent
// waits for slot 1). Legal under all-port always, under one-port when every
// node sends at most one and receives at most one packet (permutation, one-to-one).
SlotSchedule direct_schedule(const TaskInstance& task, LinkModel model);
// One-port complete graph, scatter: the root sends to its destinations one per slot.
SlotSchedule sequential_scatter(const TaskInstance& task);
// One-port complete graph, TE / MNB / PMNS: in slot t - 1 (t = 1..N-1) every
// origin v sends to (v + t) mod N; each node sends one and receives one packet
// per slot. Half duplex: slot t = N/2 (N even) would carry both directions of
// a link and is split in two.
SlotSchedule shifted_exchange(const TaskInstance& task, LinkModel model);

}  // namespace switchyard::primitives::detail
