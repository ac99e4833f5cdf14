#pragma once
// Edge-disjoint spanning trees (Varvarigos section 3.3): the trees the PMNB
// broadcasts on. A general algorithm for any connected graph (matroid union:
// Edmonds' matroid partitioning with breadth-first augmenting paths, as in
// Roskind & Tarjan) finds the largest number k the graph has, or the k asked
// for; explicit constructions give the maximum with small diameters where one
// is known: floor(N/2) double stars of diameter 3 in K_N, and a product
// construction for hypercubes (floor(d/2)) and tori (one per side >= 3). The
// trees are undirected: a link of tree i carries only tree i's packets, in
// both directions (full duplex) or one at a time (half). Johnsson & Ho's d
// arc-disjoint directed trees of the d-cube (rooted, for one source) are not
// built here: the PMNB theorem checked is the undirected one.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// A tree edge: the two nodes of a network link.
using TreeEdge = std::pair<Node, Node>;

/// Edge-disjoint spanning trees of a network, and the construction that found them.
struct EdgeDisjointTrees {
  std::string construction;  ///< "double stars", "cycle product", "matroid union"
  std::vector<std::vector<TreeEdge>> trees;  ///< each N - 1 edges of the network
  int count() const noexcept { return static_cast<int>(trees.size()); }  ///< k, the number of trees
};

/// The maximum number of edge-disjoint spanning trees of any connected graph
/// (wanted == nullopt), or min(wanted, that maximum) of them. O(k * m * N) per
/// augmenting step in the worst case: meant for graphs of a few thousand links.
EdgeDisjointTrees matroid_union_trees(const VirtualNetwork& network, std::optional<int> wanted = std::nullopt);

/// floor(n / 2) edge-disjoint double stars of K_n (n >= 2): tree i has centres
/// i and i + n/2 joined by an edge; for j != i, tree i joins j to i and j + n/2
/// to i + n/2 while tree j joins i + n/2 to j and i to j + n/2, which uses each
/// link of the pairs {i, i + n/2}, {j, j + n/2} once; an odd n's last node
/// hangs off centre i in tree i. Diameter 3.
EdgeDisjointTrees complete_graph_trees(Node n);

/// The maximum number of edge-disjoint spanning trees of a hypercube
/// (floor(d/2); Q_2j is a product of j 4-cycles, an odd d adds a link) or of a
/// torus with sides >= 3 and at most one side of 2 (one tree per side >= 3),
/// built one factor at a time: G x C_n turns G's k trees and its k unused
/// links into k + 1 trees and k + 1 unused links (see times_cycle), G x K_2
/// keeps k trees, joined at their centres. O(N k) and diameters that grow with
/// the sum of the sides (the 2-d torus n1 x n2: 2 n1 + n2 - 3 and n1 + 2 n2 - 3;
/// Q_12: 33 .. 51), where the matroid union on Q_12 takes a minute and returns
/// diameters near 150. Throws InvalidArgument for another network.
EdgeDisjointTrees cycle_product_trees(const VirtualNetwork& network);
/// Whether cycle_product_trees() applies to the network (a hypercube, or a
/// torus with a side of 3 or more and at most one side of 2).
bool has_cycle_product_trees(const VirtualNetwork& network);

/// The best trees this library knows for the network: the explicit
/// construction when there is one (they are maximum), else the matroid union.
EdgeDisjointTrees edge_disjoint_spanning_trees(const VirtualNetwork& network, std::optional<int> wanted = std::nullopt);

/// Throws InvalidArgument unless every tree is a spanning tree of `network`
/// (N - 1 links of the network, connected) and no link is in two trees.
void check_edge_disjoint_spanning_trees(const VirtualNetwork& network, const EdgeDisjointTrees& trees);

/// The number of links on the longest path of a tree over n nodes (the L_i of
/// the PMNB bound): two breadth-first searches.
int tree_diameter(Node n, std::span<const TreeEdge> tree);

/// Adjacency lists of a tree (or forest) over n nodes.
std::vector<std::vector<Node>> tree_adjacency(Node n, std::span<const TreeEdge> tree);

}  // namespace switchyard::primitives
