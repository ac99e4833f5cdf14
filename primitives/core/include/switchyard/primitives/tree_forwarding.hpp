#pragma once
// Greedy forwarding on edge-disjoint spanning trees, one slot at a time: the
// rule of the PMNB's second phase (section 3.3) and of the direct dynamic
// broadcasting scheme (section 3.4). A packet of class j (broadcast on tree j)
// that node v holds is queued, first come first served, on every tree-j link
// of v but the one it came in on; each slot every directed tree link sends the
// head of its queue (full duplex), or a link sends one packet in the direction
// of its longer queue (half duplex, ties to the link's first direction).
//
// Built once per (network, trees) and run many times: the PMNB plans each
// broadcast with it, the direct scheme injects packets as they are generated.
// A slot costs O(links that hold packets), not O(links of the trees), so a
// 1024-node complete graph's 512 trees cost nothing while idle.
#include <cstdint>
#include <span>
#include <vector>

#include "switchyard/primitives/slot_schedule.hpp"
#include "switchyard/primitives/spanning_trees.hpp"

namespace switchyard::primitives {

/// Greedy forwarding on edge-disjoint spanning trees (see the file's description).
class GreedyTreeForwarding {
 public:
  /// `trees` must be spanning trees over `nodes` nodes (checked by the caller:
  /// check_edge_disjoint_spanning_trees).
  GreedyTreeForwarding(Node nodes, const EdgeDisjointTrees& trees, Duplex duplex);

  /// Packet `packet` enters at `source` as a packet of class `tree`: queued on
  /// every tree link of `source`. It can first cross a link in the next step().
  void inject(PacketId packet, int tree, Node source);
  /// One slot: every link sends what the rule allows; each packet that arrives
  /// is queued onward (it can leave again next slot). Returns the slot's
  /// transmissions, in link order, valid until the next call.
  std::span<const Transmission> step();
  /// Packets waiting on links (a packet queued on three links counts three times).
  std::int64_t queued() const noexcept { return queued_; }
  bool idle() const noexcept { return queued_ == 0; }  ///< no packet is queued
  int trees() const noexcept { return static_cast<int>(tree_begin_.size()) - 1; }  ///< k, the number of trees

 private:
  /// A FIFO that reuses its storage once drained (and compacts when half of it
  /// is consumed), so a busy link's queue never grows with the packets it ever held.
  struct Queue {
    std::vector<PacketId> items;
    std::size_t head = 0;
    bool empty() const noexcept { return head == items.size(); }
    std::size_t size() const noexcept { return items.size() - head; }
    PacketId pop() noexcept;
  };
  void forward(PacketId packet, std::int64_t tree_node, Node came_from);
  void send(std::size_t arc);

  Duplex duplex_;
  Node nodes_;
  std::vector<Node> arc_to_;  ///< arcs 2i and 2i + 1 are the two directions of tree link i
  std::vector<Node> arc_from_;
  std::vector<std::int32_t> arc_tree_;
  std::vector<Queue> queue_;
  /// The arcs leaving node v in tree j: out_[out_begin_[j * N + v] .. out_begin_[j * N + v + 1]).
  std::vector<std::int64_t> out_begin_;
  std::vector<std::int64_t> out_;
  std::vector<std::int64_t> tree_begin_;  ///< tree j's links are tree_begin_[j] .. tree_begin_[j + 1]
  std::vector<std::int64_t> busy_;  ///< links with a packet queued, each once
  std::vector<std::uint8_t> listed_;  ///< per link: in busy_
  std::vector<Transmission> sent_;
  std::vector<std::int32_t> sent_tree_;  ///< the class of each of sent_
  std::int64_t queued_ = 0;
};

}  // namespace switchyard::primitives
