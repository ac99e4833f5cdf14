#pragma once
// Direct dynamic broadcasting (Varvarigos section 3.4): each packet picks one
// of the k edge-disjoint spanning trees uniformly at random when it is
// generated, and is broadcast on it greedily, one FIFO queue per directed
// tree link (primitives' GreedyTreeForwarding, the PMNB's phase 2 engine). A
// packet generated during slot t - 1 can first cross a link in slot t (it
// waits 1/2 slot on average: the 1/2 of the theorem's 𝓡). All-port, full duplex.
#include "switchyard/dynamic/slot_run.hpp"
#include "switchyard/primitives/spanning_trees.hpp"

namespace switchyard::dynamic {

/// Throws InvalidArgument on bad options or trees that are not edge-disjoint
/// spanning trees of `network`, DeliveryError if a packet is lost or duplicated.
SlotRunResult run_direct_broadcast(const primitives::VirtualNetwork& network,
                                   const primitives::EdgeDisjointTrees& trees, const SlotRunOptions& options);

}  // namespace switchyard::dynamic
