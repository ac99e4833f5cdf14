#include "switchyard/primitives/slot_schedule.hpp"

#include <algorithm>
#include <stdexcept>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

std::string to_string(LinkModel model) {
  return std::string(model.ports == Ports::all_port ? "all-port" : "one-port") +
         (model.duplex == Duplex::full ? " full-duplex" : " half-duplex");
}

namespace {

void check_nodes(std::span<const Node> nodes, Node n, const char* what) {
  if (nodes.empty()) throw InvalidArgument(std::string("PacketSet::add: a packet needs at least one ") + what);
  for (Node v : nodes) {
    if (v < 0 || v >= n) {
      throw InvalidArgument(std::string("PacketSet::add: ") + what + " " + std::to_string(v) + " is outside 0.." +
                            std::to_string(n - 1));
    }
  }
}

}  // namespace

PacketId PacketSet::add(std::span<const Node> origins, std::span<const Node> destinations) {
  check_nodes(origins, nodes_, "origin");
  check_nodes(destinations, nodes_, "destination");
  const auto single = combining_ ? destinations : origins;
  const auto many = combining_ ? origins : destinations;
  if (single.size() != 1) {
    throw InvalidArgument(combining_ ? "PacketSet::add: a combining packet has exactly one destination"
                                     : "PacketSet::add: a copying packet has exactly one origin");
  }
  std::vector<Node> sorted(many.begin(), many.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw InvalidArgument("PacketSet::add: node " + std::to_string(*std::adjacent_find(sorted.begin(), sorted.end())) +
                          " is listed twice");
  }
  if (std::binary_search(sorted.begin(), sorted.end(), single[0])) {
    throw InvalidArgument("PacketSet::add: node " + std::to_string(single[0]) +
                          " is both an origin and a destination of one packet");
  }
  if (static_cast<std::int64_t>(single_.size()) >= INT32_MAX) {
    throw InvalidArgument("PacketSet::add: more than 2^31 - 1 packets");
  }
  // Materialise the CSR offsets only once some packet has more than one node at its other end.
  if (offsets_.empty() && sorted.size() != 1) {
    offsets_.resize(single_.size() + 1);
    for (std::size_t p = 0; p <= single_.size(); ++p) offsets_[p] = static_cast<std::int64_t>(p);
  }
  single_.push_back(single[0]);
  list_.insert(list_.end(), sorted.begin(), sorted.end());
  if (!offsets_.empty()) offsets_.push_back(static_cast<std::int64_t>(list_.size()));
  return static_cast<PacketId>(single_.size() - 1);
}

PacketId PacketSet::add(Node origin, Node destination) {
  return add(std::span<const Node>(&origin, 1), std::span<const Node>(&destination, 1));
}

std::span<const Node> PacketSet::many(PacketId p) const noexcept {
  if (offsets_.empty()) return {list_.data() + p, 1};
  return {list_.data() + offsets_[p], list_.data() + offsets_[p + 1]};
}

std::int64_t PacketSet::deliveries() const noexcept {
  return combining_ ? static_cast<std::int64_t>(single_.size()) : static_cast<std::int64_t>(list_.size());
}

void SlotSchedule::add(std::int32_t slot, Transmission t) {
  if (slot < slots() - 1 || slot < 0) {
    throw InvalidArgument("SlotSchedule::add: slot " + std::to_string(slot) + " is before the last slot " +
                          std::to_string(slots() - 1) + " (use SlotScheduleBuilder for any order)");
  }
  while (slots() <= slot) slot_begin_.push_back(slot_begin_.back());
  transmissions_.push_back(t);
  ++slot_begin_.back();
}

void SlotScheduleBuilder::add(std::int32_t slot, Transmission t) {
  if (slot < 0) throw InvalidArgument("SlotScheduleBuilder::add: negative slot " + std::to_string(slot));
  slot_of_.push_back(slot);
  transmissions_.push_back(t);
}

SlotSchedule SlotScheduleBuilder::build() && {
  // Counting sort by slot: linear, stable, no comparison sort of 10^7 entries.
  SlotSchedule s;
  const std::int32_t slots = slot_of_.empty() ? 0 : *std::max_element(slot_of_.begin(), slot_of_.end()) + 1;
  s.slot_begin_.assign(static_cast<std::size_t>(slots) + 1, 0);
  for (std::int32_t t : slot_of_) ++s.slot_begin_[static_cast<std::size_t>(t) + 1];
  for (std::size_t t = 1; t < s.slot_begin_.size(); ++t) s.slot_begin_[t] += s.slot_begin_[t - 1];
  s.transmissions_.resize(transmissions_.size());
  std::vector<std::int64_t> fill(s.slot_begin_.begin(), s.slot_begin_.end() - 1);
  for (std::size_t i = 0; i < transmissions_.size(); ++i) s.transmissions_[fill[slot_of_[i]]++] = transmissions_[i];
  slot_of_.clear();
  transmissions_.clear();
  return s;
}

}  // namespace switchyard::primitives
