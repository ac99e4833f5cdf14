#pragma once
// Seeded random connected graphs: the "any connected graph" the PMNB and
// spanning-tree theorems are checked on beside the regular topologies.
#include <cstdint>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// A random tree (node v > 0 joins a uniformly drawn earlier node, after a
/// random relabelling) plus `extra_links` distinct random links more (fewer if
/// the complete graph runs out). Throws InvalidArgument for n < 1.
VirtualNetwork random_connected_graph(Node n, std::int64_t extra_links, std::uint64_t seed);

}  // namespace switchyard::primitives
