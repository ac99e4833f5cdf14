#pragma once
// Isotropic tasks (Varvarigos section 3.1; Varvarigos & Bertsekas 1992) on
// hypercubes and wraparound meshes: a task is isotropic when every node's task
// matrix T(s) -- one row per packet, the packet's routing tag -- is the same T.
// Routing then reduces to a matrix problem: a symmetric algorithm is a slot
// assignment of T's unit entries where no row (a packet crosses one link per
// slot) and no column (a node sends one packet per direction per slot) is used
// twice in a slot. The critical sum h, the largest row or column sum, is a
// lower bound, and an edge colouring of T's bipartite multigraph (König: max
// degree h colours) meets it, so the optimum is exactly h slots.
//
// Link model of every theorem here: all-port, full duplex (each node sends one
// packet on each of its outgoing arcs per slot; a link carries one packet each
// way per slot).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/slot_algorithms.hpp"
#include "switchyard/primitives/slot_schedule.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// The group Z_{n_1} x ... x Z_{n_d} a hypercube (every side 2) or torus
/// (VirtualNetwork's mixed radix, first side fastest) is, with its directions:
/// + and - along each side of at least 3, + alone along a side of 2 (one link),
/// none along a side of 1. Moving a node along a direction is a table look-up.
class IsotropicLattice {
 public:
  /// Throws InvalidArgument unless `network` is a hypercube or a torus.
  explicit IsotropicLattice(const VirtualNetwork& network);

  Node size() const noexcept { return size_; }  ///< the number of nodes, N
  /// The number of directions: two per side of at least 3, one per side of 2.
  int directions() const noexcept { return static_cast<int>(direction_side_.size()); }
  int dimensions() const noexcept { return static_cast<int>(sides_.size()); }  ///< d, the number of sides
  std::span<const Node> sides() const noexcept { return sides_; }  ///< the side lengths n_1 .. n_d
  /// The side a direction moves along, and whether it moves up (+1) or down (-1).
  int direction_side(int c) const noexcept { return direction_side_[c]; }
  int direction_sign(int c) const noexcept { return direction_sign_[c]; }  ///< +1 or -1
  /// The neighbour of v along direction c.
  Node step(Node v, int c) const noexcept { return steps_[static_cast<std::size_t>(c) * size_ + v]; }
  /// Group operations on node indices.
  Node add(Node a, Node b) const noexcept;
  Node subtract(Node a, Node b) const noexcept;  ///< a - b in the group

 private:
  Node size_ = 0;
  std::vector<Node> sides_;
  std::vector<Node> radix_;  ///< radix_[i]: the weight of coordinate i in a node index
  std::vector<int> direction_side_;
  std::vector<int> direction_sign_;
  std::vector<Node> steps_;  ///< directions() x size()
};

/// T: one row per packet a node sends, in the order of its offsets (the
/// destination relative to the source, as a node index: destination = source +
/// offset). Entry (r, c) is how many hops row r makes along direction c: the
/// hypercube tag s xor t has one column per dimension; the torus tag has the
/// paper's 2d components, the + and - distance along each side (shortest way;
/// an offset of exactly half an even side goes + for half of the rows with it
/// and - for the other half, which balances the two columns).
struct TaskMatrix {
  int columns = 0;  ///< the number of columns: one per direction of the lattice
  std::vector<Node> offsets;  ///< one per row
  std::vector<std::int32_t> entries;  ///< rows x columns, row-major
  /// The number of rows: one per packet a node sends.
  std::int64_t rows() const noexcept { return static_cast<std::int64_t>(offsets.size()); }
  /// Entry (r, c): hops of row r along direction c.
  std::int32_t at(std::int64_t r, int c) const noexcept { return entries[static_cast<std::size_t>(r * columns + c)]; }
};

/// The task matrix of a task in which every node sends one packet to each of
/// the given offsets (distinct, nonzero). Total exchange: every nonzero offset.
TaskMatrix task_matrix(const IsotropicLattice& lattice, std::span<const Node> offsets);
/// The task matrix of a total exchange: every nonzero offset.
TaskMatrix total_exchange_task_matrix(const IsotropicLattice& lattice);

/// h = max over rows and columns of their sums.
std::int64_t critical_sum(const TaskMatrix& matrix);

/// A symmetric algorithm: in slot t every node sends, along direction c, the
/// packet of row r, for each (r, c) in slot t. Each packet crosses a link per
/// entry of its row, so it arrives.
struct IsotropicMove {
  std::int32_t row = 0;  ///< the row of T whose packet moves
  std::int32_t direction = 0;  ///< the direction it moves along
};
/// A symmetric schedule: the moves every node makes, slot by slot.
struct IsotropicSchedule {
  std::vector<std::vector<IsotropicMove>> slots;  ///< slots[t]: the moves of slot t
};

/// Completes in exactly h slots: the slot of each unit entry is its colour in
/// an h-edge-colouring of T's bipartite multigraph (rows x columns, entry (r, c)
/// = that many parallel edges), found with alternating-path swaps.
IsotropicSchedule optimal_isotropic_schedule(const TaskMatrix& matrix);

/// The "never leave a link idle" rule: in every slot each direction carries a
/// packet whenever some packet not yet moving this slot still needs that
/// direction (a maximal assignment; which one is the priority's choice).
enum class GreedyPriority : std::uint8_t {
  row_order,  ///< the first row in offset order: an arbitrary fixed choice
  farthest_first,  ///< the packet with the longest route first
  nearest_first,  ///< the packet with the shortest route first
  random,  ///< a seeded random order of the rows
};
/// A schedule by the "never leave a link idle" rule, rows chosen by `priority` (`seed` for random).
IsotropicSchedule greedy_isotropic_schedule(const TaskMatrix& matrix, GreedyPriority priority, std::uint64_t seed = 1);

/// The packets of the task, node-major: packet s * rows + r goes from s to s + offset_r.
PacketSet isotropic_packets(const IsotropicLattice& lattice, const TaskMatrix& matrix);

/// A task given as packets, recognised as isotropic: its matrix, and the id of
/// the packet of row r sent by node s at packet_ids[s * rows + r]. nullopt when
/// the task is not isotropic (combining packets, several destinations, or nodes
/// whose offsets differ).
struct IsotropicTask {
  TaskMatrix matrix;  ///< the task's matrix
  std::vector<PacketId> packet_ids;  ///< packet_ids[s * rows + r]: the packet of row r sent by node s
};
/// The task as an IsotropicTask, or nullopt when it is not isotropic.
std::optional<IsotropicTask> as_isotropic(const IsotropicLattice& lattice, const PacketSet& packets);

/// Expands slot t of a symmetric schedule to the transmissions of every node.
/// Packet ids are packet_ids[s * rows + r] (empty: node-major, s * rows + r, as
/// isotropic_packets numbers them). Call next() for t = 0, 1, ... in order: the
/// expander tracks where each row's packets are.
class IsotropicExpander {
 public:
  /// The expander refers to `lattice`, `matrix`, `schedule` and `packet_ids`, which must outlive it.
  IsotropicExpander(const IsotropicLattice& lattice, const TaskMatrix& matrix, const IsotropicSchedule& schedule,
                    std::span<const PacketId> packet_ids = {});
  /// The schedule's slots.
  std::int32_t slots() const noexcept { return static_cast<std::int32_t>(schedule_->slots.size()); }
  /// Transmissions of the next slot (the node-major packet ids of isotropic_packets).
  std::span<const Transmission> next();

 private:
  const IsotropicLattice* lattice_;
  const TaskMatrix* matrix_;
  const IsotropicSchedule* schedule_;
  std::span<const PacketId> packet_ids_;
  std::int32_t slot_ = 0;
  std::vector<Node> displacement_;  ///< per row: where its packets are, relative to their sources
  std::vector<Transmission> buffer_;
};

/// The whole node-level schedule (for the registry and the mailbox executor;
/// the theorem checks stream IsotropicExpander::next() instead).
SlotSchedule expand_isotropic_schedule(const IsotropicLattice& lattice, const TaskMatrix& matrix,
                                       const IsotropicSchedule& schedule, std::span<const PacketId> packet_ids = {});

/// The registry's entry (slot_algorithms.hpp) for a task `as_isotropic`
/// recognises (TE on a hypercube or torus), all-port full duplex: the optimal
/// schedule, its optimum h named "critical sum h". Throws InvalidArgument
/// for a network that is not a hypercube or torus or a task that is not isotropic.
SlotAlgorithmResult isotropic_optimal(const VirtualNetwork& network, LinkModel model, const TaskInstance& task);

/// Checks the row and column rules of every slot and that every unit entry is
/// moved exactly once; throws std::logic_error naming the first violation.
void check_isotropic_schedule(const TaskMatrix& matrix, const IsotropicSchedule& schedule);

}  // namespace switchyard::primitives
