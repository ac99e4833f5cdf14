#pragma once
// The partial multinode broadcast on k edge-disjoint spanning trees
// (Varvarigos section 3.3; Varvarigos & Banerjee 1996), and its dual, the
// partial multinode accumulation. Link model: all-port, full or half duplex.
//
// Phase 1, a parallel prefix on a breadth-first spanning tree of the network
// rooted at a centre (depth H = the radius <= delta): counts climb to the root
// (H slots), offsets and M come down (H slots), so every node learns M and the
// global rank of each of its packets. These 2H slots are real transmissions
// in the schedule: one control packet per tree link and direction.
// Phase 2, from slot 2H: the packet of rank q picks tree j by cutting the
// ranks into k runs, n_j packets for tree j, chosen so that n_j + L_j is as
// even as it can be (a tree of larger diameter gets fewer packets; plain
// round-robin would finish at M/k + max L_j, not M/k + mean L). Each packet is
// broadcast on its tree greedily: every tree arc sends, per slot, the oldest
// packet its tail holds and its head has neither received nor sent
// (first-come first-served is the "arbitrary" conflict rule); under half
// duplex a link whose two arcs both wait sends the longer queue's packet.
//
// Theorem checked (full duplex, k the maximum number of edge-disjoint
// spanning trees): max(M / 2k, delta) <= T_PMNB <= M/k + Lbar + 2 delta.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/slot_algorithms.hpp"
#include "switchyard/primitives/slot_schedule.hpp"
#include "switchyard/primitives/spanning_trees.hpp"
#include "switchyard/primitives/tree_forwarding.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// A PMNB or PMNA written out: its packets, its schedule, and the quantities of its theorem.
struct PmnbPlan {
  /// The task's packets with their ids unchanged, then the prefix's control
  /// packets (one hop each: a count to a parent, an offset to a child).
  PacketSet packets;
  SlotSchedule schedule;  ///< the prefix's 2H slots, then phase 2
  std::int64_t broadcast_packets = 0;  ///< M
  std::int32_t prefix_slots = 0;  ///< 2H
  int trees = 0;  ///< k
  double mean_tree_diameter = 0;  ///< Lbar
  int diameter = 0;  ///< delta
  std::vector<std::int64_t> packets_per_tree;  ///< n_j

  double upper_bound() const noexcept;  ///< M/k + Lbar + 2 delta
  double lower_bound_full() const noexcept;  ///< max(M / 2k, delta), k maximum
  double lower_bound_half() const noexcept;  ///< max(M / k, delta), k maximum
};

/// The PMNB of one network and set of trees, built once (trees checked, their
/// diameters, the prefix tree, the forwarding engine) and planned many times:
/// what pmnb_plan / pmna_plan do per call, and what the indirect dynamic
/// broadcasting scheme does once per PMNB period.
class PmnbPlanner {
 public:
  /// Throws InvalidArgument when `trees` are not edge-disjoint spanning trees of
  /// `network` (or there are none). `network` must outlive the planner.
  PmnbPlanner(const VirtualNetwork& network, const EdgeDisjointTrees& trees, Duplex duplex);
  ~PmnbPlanner();  ///< frees the forwarding engine and prefix tree
  PmnbPlanner(PmnbPlanner&&) noexcept;  ///< takes over the other planner's state
  PmnbPlanner& operator=(PmnbPlanner&&) noexcept;  ///< takes over the other planner's state

  int trees() const noexcept;  ///< k
  std::span<const int> tree_diameters() const noexcept;  ///< L_1 .. L_k
  double mean_tree_diameter() const noexcept;  ///< Lbar
  int diameter() const;  ///< delta
  std::int32_t prefix_slots() const noexcept;  ///< 2H: phase 1, whatever M is

  /// Phase 1's outcome, which every node computes from M and its offset: the
  /// tree of each packet, given each packet's source (a node may repeat).
  std::vector<int> choose_trees(std::span<const Node> sources) const;
  /// Phase 2 for packets spreading from `sources`: calls on_slot(slot, the
  /// slot's transmissions) for each slot from 0 (after the prefix) until every
  /// packet (id = index in `sources`) is everywhere; returns the slots taken.
  template <class OnSlot>
  std::int32_t broadcast(std::span<const Node> sources, OnSlot&& on_slot) {
    const std::vector<int> tree_of = choose_trees(sources);
    GreedyTreeForwarding& engine = forwarding();
    for (std::size_t p = 0; p < sources.size(); ++p) engine.inject(static_cast<PacketId>(p), tree_of[p], sources[p]);
    std::int32_t slot = 0;
    for (; !engine.idle(); ++slot) on_slot(slot, engine.step());
    return slot;
  }
  /// The whole plan: the prefix's control packets and slots, then phase 2
  /// (reversed for the combining PMNA). Throws as pmnb_plan / pmna_plan do.
  PmnbPlan plan(const PacketSet& packets, bool combining);

 private:
  GreedyTreeForwarding& forwarding() noexcept;
  struct State;
  std::unique_ptr<State> state_;
};

/// The slots of phase 1 alone, 2H (H the depth of the prefix tree, <= delta):
/// what any algorithm that starts with the PMNB's parallel prefix (to let every
/// node learn M and its packets' ranks) pays before it moves a packet.
std::int32_t parallel_prefix_slots(const VirtualNetwork& network);

/// Copying PMNB packets: one per entry of `broadcasters` (a node may appear
/// several times: several packets), each to every other node.
PacketSet pmnb_packets(Node n, std::span<const Node> broadcasters);
/// Combining PMNA packets: one per entry of `collectors`, each from every other node.
PacketSet pmna_packets(Node n, std::span<const Node> collectors);

/// `packets` (copying, each to every node but its origin) broadcast on `trees`.
/// Throws InvalidArgument on a combining set, a one-port model, or trees
/// that are not edge-disjoint spanning trees of `network`.
PmnbPlan pmnb_plan(const VirtualNetwork& network, const PacketSet& packets, const EdgeDisjointTrees& trees,
                   Duplex duplex);

/// The dual: `packets` (combining, each from every node but its destination)
/// accumulated by the PMNB schedule of their destinations run backwards (slot
/// order and arcs reversed, after the same prefix): a node sends its
/// combination toward the destination once all its subtree's has arrived.
PmnbPlan pmna_plan(const VirtualNetwork& network, const PacketSet& packets, const EdgeDisjointTrees& trees,
                   Duplex duplex);

/// The registry's entries (slot_algorithms.hpp) for TaskKind::pmnb and TaskKind::pmna,
/// all-port: the plan on edge_disjoint_spanning_trees(network), its packets in
/// the result (the prefix adds control packets), and the bounds M/k + Lbar +
/// 2 delta (upper, first) and max(M/2k, delta) or max(M/k, delta) (lower).
SlotAlgorithmResult pmnb_on_trees(const VirtualNetwork& network, LinkModel model, const TaskInstance& task);
/// The PMNA's entry (see pmnb_on_trees).
SlotAlgorithmResult pmna_on_trees(const VirtualNetwork& network, LinkModel model, const TaskInstance& task);

}  // namespace switchyard::primitives
