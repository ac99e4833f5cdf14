#include "switchyard/dynamic/indirect_broadcast.hpp"

namespace switchyard::dynamic {

PmnbAlgorithm::PmnbAlgorithm(const primitives::VirtualNetwork& network, const primitives::EdgeDisjointTrees& trees)
    : nodes_(network.size()), planner_(network, trees, primitives::Duplex::full) {}

std::int64_t PmnbAlgorithm::execute(std::span<const std::int32_t> origins, DeliverySink& sink) {
  const std::int64_t prefix = planner_.prefix_slots();
  const std::int32_t phase =
      planner_.broadcast(origins, [&](std::int32_t slot, std::span<const primitives::Transmission> sent) {
        for (const auto& t : sent) sink.deliver(t.packet, t.to, prefix + slot + 1);
      });
  return prefix + phase;
}

}  // namespace switchyard::dynamic
