#pragma once
// The routers of a real-mode pipeline: the static-to-dynamic wrapper's period
// loop (real_wrapper.cpp) and direct broadcasting's greedy tree forwarding
// (real_direct.cpp). Each runs as node `routers.rank()`'s router process and
// returns once its producer has finished and everything has drained.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "real_node.hpp"
#include "switchyard/dynamic/real_static_to_dynamic.hpp"
#include "switchyard/process.hpp"

namespace switchyard::dynamic::detail {

// A link of a node on one of the edge-disjoint spanning trees.
struct TreeLink {
  Rank peer = 0;
  std::uint32_t tree = 0;
};

Task<void> wrapper_router(Process& p, Communicator routers, Rank producer, RealStaticAlgorithm& algorithm,
                          Ledger& ledger, std::size_t packet_bytes);

// `links`: this node's tree links; `trees`: k. A packet from the producer
// takes tree (its header's `tree`), chosen by the producer.
Task<void> direct_router(Process& p, Communicator routers, Rank producer, const std::vector<TreeLink>& links,
                         Ledger& ledger, std::size_t packet_bytes);

}  // namespace switchyard::dynamic::detail
