#include "switchyard/dynamic/direct_broadcast.hpp"

#include <algorithm>

#include "switchyard/dynamic/arrival_streams.hpp"
#include "switchyard/dynamic/delivery_ledger.hpp"
#include "switchyard/primitives/tree_forwarding.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::dynamic {

SlotRunResult run_direct_broadcast(const primitives::VirtualNetwork& network,
                                   const primitives::EdgeDisjointTrees& trees, const SlotRunOptions& options) {
  const std::int32_t n = network.size();
  check_slot_run_options(n, options);
  if (trees.count() == 0) throw InvalidArgument("direct broadcasting: no spanning tree to broadcast on");
  primitives::check_edge_disjoint_spanning_trees(network, trees);
  primitives::GreedyTreeForwarding forwarding(n, trees, primitives::Duplex::full);
  ArrivalStreams arrivals(n, options.rate, options.seed);
  // The tree choices draw from their own stream, so they do not shift the arrivals.
  SplitMix64 choose(splitmix64(options.seed ^ 0x7472656573ull));
  DeliveryLedger ledger(n, options);
  const auto stop = static_cast<double>(options.slots);
  const auto k = static_cast<std::uint64_t>(trees.count());
  std::int64_t slot = 0;
  for (;; ++slot) {
    // Requests generated before the start of this slot enter now.
    arrivals.until(std::min(static_cast<double>(slot), stop), [&](std::int32_t node, double time) {
      forwarding.inject(ledger.open(node, time), static_cast<int>(choose() % k), node);
    });
    if (slot >= options.slots && forwarding.idle()) break;
    for (const auto& t : forwarding.step()) ledger.deliver(t.packet, t.to, slot + 1);
  }
  return ledger.finish(slot);
}

}  // namespace switchyard::dynamic
