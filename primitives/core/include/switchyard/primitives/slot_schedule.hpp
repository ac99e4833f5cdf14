#pragma once
// The slot world of the Varvarigos library: the link model a slot obeys, the
// packets of a task, and a routing algorithm written out per slot (which packet
// crosses which link in which slot). Pure data: the slot simulator checks and
// counts a schedule, the mailbox executor runs it on the runtime.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// How many links a node may use per slot: all-port (every link, each
/// direction, one packet per slot) or one-port (a node sends at most one and
/// receives at most one packet per slot: the real machine, and the model of
/// the binomial tree).
enum class Ports : std::uint8_t { all_port, one_port };
/// Full duplex: a link carries one packet each way per slot; half duplex: one
/// packet in one direction per slot.
enum class Duplex : std::uint8_t { full, half };

/// The ports and duplex of every node and link, per slot.
struct LinkModel {
  Ports ports = Ports::one_port;  ///< all-port or one-port
  Duplex duplex = Duplex::full;  ///< full or half duplex
  bool operator==(const LinkModel &) const = default;  ///< the same ports and duplex
};
/// The real machine: the complete graph under one-port full duplex.
inline constexpr LinkModel kMachineLinkModel{Ports::one_port, Duplex::full};
std::string to_string(LinkModel model);  ///< "one-port full-duplex", ...

/// A packet's index in its PacketSet.
using PacketId = std::int32_t;

/// The packets of a task. Two kinds, fixed per set:
/// - copying (broadcast, scatter, TE, ...): packet p has one origin and one or
///   more destinations; a node that holds it may send copies. A packet with one
///   destination is routed: a node forwarding it gives it away (state is one
///   location, which is what lets the simulator hold a 4096-node TE).
/// - combining (SNA, SSNA, PMNA): packet p has one destination and one or more
///   origins, each contributing a value; values meeting at a node combine, and
///   a node sending p hands over everything it holds of p (so no contribution
///   can arrive twice).
class PacketSet {
 public:
  PacketSet() = default;
  /// An empty set of packets among `nodes` nodes, copying or combining.
  PacketSet(Node nodes, bool combining) : nodes_(nodes), combining_(combining) {}

  /// Appends a packet; for a copying set `origins` has one node, for a
  /// combining set `destinations` has one. Throws InvalidArgument on an
  /// out-of-range node, an empty or repeated list, or a node both origin and destination.
  PacketId add(std::span<const Node> origins, std::span<const Node> destinations);
  PacketId add(Node origin, Node destination);  ///< one origin, one destination

  Node nodes() const noexcept { return nodes_; }  ///< the nodes the packets travel among
  bool combining() const noexcept { return combining_; }  ///< combining (else copying)
  PacketId size() const noexcept { return static_cast<PacketId>(single_.size()); }  ///< the number of packets
  /// Packet p's origins (one, for a copying set).
  std::span<const Node> origins(PacketId p) const noexcept { return combining_ ? many(p) : one(p); }
  /// Packet p's destinations (one, for a combining set).
  std::span<const Node> destinations(PacketId p) const noexcept { return combining_ ? one(p) : many(p); }
  /// Sum over packets of destinations (copying) or origins (combining): the deliveries the task makes.
  std::int64_t deliveries() const noexcept;

 private:
  std::span<const Node> one(PacketId p) const noexcept { return {single_.data() + p, 1}; }
  std::span<const Node> many(PacketId p) const noexcept;

  Node nodes_ = 0;
  bool combining_ = false;
  std::vector<Node> single_;  ///< the origin (copying) or destination (combining) of each packet
  /// The other end, CSR: packet p's list is list_[offsets_[p] .. offsets_[p + 1]).
  /// While every packet has exactly one, offsets_ stays empty (a TE of 16M packets saves 128 MiB).
  std::vector<std::int64_t> offsets_;
  std::vector<Node> list_;
};

/// One packet crossing the link from -> to in a slot.
struct Transmission {
  Node from = 0;  ///< the sending node
  Node to = 0;  ///< the receiving node, a neighbour of from
  PacketId packet = 0;  ///< the packet that crosses
  bool operator==(const Transmission &) const = default;  ///< the same link and packet
};

/// A routing algorithm written out per slot. Slots are numbered from 0; a
/// packet received in slot t can be sent on in slot t + 1. An empty slot still
/// takes its time (it counts towards slots()).
class SlotSchedule {
 public:
  /// Appends to slot `slot`, which must be the last slot so far or a later one
  /// (throws InvalidArgument otherwise: build out-of-order schedules with
  /// SlotScheduleBuilder).
  void add(std::int32_t slot, Transmission t);
  /// Slots, empty ones included.
  std::int32_t slots() const noexcept { return static_cast<std::int32_t>(slot_begin_.size()) - 1; }
  /// The transmissions of slot t (0 <= t < slots()).
  std::span<const Transmission> slot(std::int32_t t) const noexcept {
    return {transmissions_.data() + slot_begin_[t], transmissions_.data() + slot_begin_[t + 1]};
  }
  /// Every transmission, slot by slot.
  std::span<const Transmission> transmissions() const noexcept { return transmissions_; }
  /// Room for this many transmissions.
  void reserve(std::size_t transmissions) { transmissions_.reserve(transmissions); }

 private:
  friend class SlotScheduleBuilder;
  std::vector<std::int64_t> slot_begin_{0};  // slot t is transmissions_[slot_begin_[t] .. slot_begin_[t + 1])
  std::vector<Transmission> transmissions_;
};

/// Collects transmissions in any slot order (trees compute each edge's slot
/// independently) and sorts them into a SlotSchedule by slot (stable).
class SlotScheduleBuilder {
 public:
  void add(std::int32_t slot, Transmission t);  ///< in any slot order
  SlotSchedule build() &&;  ///< the schedule, sorted by slot (stable); consumes the builder

 private:
  std::vector<std::int32_t> slot_of_;
  std::vector<Transmission> transmissions_;
};

}  // namespace switchyard::primitives
