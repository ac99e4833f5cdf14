#include "switchyard/dynamic/dynamic_scatter.hpp"

#include <algorithm>

#include "switchyard/primitives/pmnb.hpp"
#include "switchyard/primitives/slot_algorithms.hpp"
#include "switchyard/primitives/slot_simulator.hpp"
#include "switchyard/primitives/slot_task.hpp"

namespace switchyard::dynamic {

namespace sp = primitives;

SequentialScatterPmns::SequentialScatterPmns(const sp::VirtualNetwork& network)
    : nodes_(network.size()),
      prefix_(sp::parallel_prefix_slots(network)),
      scatter_slots_(static_cast<std::size_t>(network.size()), 0),
      arrival_(static_cast<std::size_t>(network.size()) * static_cast<std::size_t>(network.size()), 0) {
  const sp::LinkModel model{sp::Ports::all_port, sp::Duplex::full};
  for (sp::Node s = 0; s < nodes_; ++s) {
    sp::TaskOptions options;
    options.root = s;
    const sp::TaskInstance task = sp::make_task(sp::TaskKind::sns, network, options);
    const sp::SlotAlgorithmResult routed = sp::route(network, model, task);
    const sp::PacketSet& packets = routed.packets ? *routed.packets : task.packets;
    sp::simulate(network, model, packets, routed.schedule);  // throws if the schedule breaks a rule or misses a node
    scatter_algorithm_ = routed.algorithm;
    scatter_slots_[static_cast<std::size_t>(s)] = routed.schedule.slots();
    longest_scatter_ = std::max<std::int64_t>(longest_scatter_, routed.schedule.slots());
    for (std::int32_t slot = 0; slot < routed.schedule.slots(); ++slot) {
      for (const auto& t : routed.schedule.slot(slot)) {
        if (t.packet < task.packets.size() && task.packets.destinations(t.packet)[0] == t.to) {
          arrival_[static_cast<std::size_t>(s) * static_cast<std::size_t>(nodes_) + static_cast<std::size_t>(t.to)] =
              slot + 1;
        }
      }
    }
  }
}

std::int64_t SequentialScatterPmns::execute(std::span<const std::int32_t> origins, DeliverySink& sink) {
  std::int64_t start = prefix_;
  for (std::size_t r = 0; r < origins.size(); ++r) {
    const auto s = static_cast<std::size_t>(origins[r]);
    const std::int32_t* arrival = arrival_.data() + s * static_cast<std::size_t>(nodes_);
    for (std::int32_t d = 0; d < nodes_; ++d) {
      if (d != origins[r]) sink.deliver(static_cast<std::int32_t>(r), d, start + arrival[d]);
    }
    start += scatter_slots_[s];
  }
  return start;
}

}  // namespace switchyard::dynamic
