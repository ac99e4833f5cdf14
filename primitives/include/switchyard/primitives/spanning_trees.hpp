#pragma once
// Edge-disjoint spanning trees (Varvarigos section 3.3): the trees the PMNB
// broadcasts on. A general algorithm for any connected graph (matroid union:
// Edmonds' matroid partitioning with breadth-first augmenting paths, as in
// Roskind & Tarjan) finds the largest number k the graph has, or the k asked
// for; explicit constructions give the maximum with small diameters where one
// is known: floor(N/2) double stars of diameter 3 in K_N, and 2 trees of the
// 2-dimensional torus. The trees are undirected: a link of tree i carries only
// tree i's packets, in both directions (full duplex) or one at a time (half).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

using TreeEdge = std::pair<Node, Node>;

struct EdgeDisjointTrees {
  std::string construction;                  // "double stars", "2-d torus combs", "matroid union"
  std::vector<std::vector<TreeEdge>> trees;  // each N - 1 edges of the network
  int count() const noexcept { return static_cast<int>(trees.size()); }
};

// The maximum number of edge-disjoint spanning trees of any connected graph
// (wanted == nullopt), or min(wanted, that maximum) of them. O(k * m * N) per
// augmenting step in the worst case: meant for graphs of a few thousand links.
EdgeDisjointTrees matroid_union_trees(const VirtualNetwork& network, std::optional<int> wanted = std::nullopt);

// floor(n / 2) edge-disjoint double stars of K_n (n >= 2): tree i has centres
// i and i + n/2 joined by an edge; for j != i, tree i joins j to i and j + n/2
// to i + n/2 while tree j joins i + n/2 to j and i to j + n/2, which uses each
// link of the pairs {i, i + n/2}, {j, j + n/2} once; an odd n's last node
// hangs off centre i in tree i. Diameter 3.
EdgeDisjointTrees complete_graph_trees(Node n);

// 2 edge-disjoint spanning trees of the n1 x n2 torus (n1, n2 >= 3, first
// side fastest). Tree A: the rows 0 .. n2-2 as paths (no wraparound link),
// joined by column 0, and row n2-1 hung off row 0 by the vertical wraparound
// links of columns 1 .. n1-1. Tree B: columns 1 .. n1-1 as paths, joined by
// row n2-1, and column 0 hung off column n1-1 by the horizontal wraparound
// links. Unused: column 0's wraparound link and row n2-1's link 0-1.
EdgeDisjointTrees torus2d_trees(Node n1, Node n2);

// The best trees this library knows for the network: the explicit
// construction when there is one (they are maximum), else the matroid union.
EdgeDisjointTrees edge_disjoint_spanning_trees(const VirtualNetwork& network, std::optional<int> wanted = std::nullopt);

// Throws std::invalid_argument unless every tree is a spanning tree of `network`
// (N - 1 links of the network, connected) and no link is in two trees.
void check_edge_disjoint_spanning_trees(const VirtualNetwork& network, const EdgeDisjointTrees& trees);

// The number of links on the longest path of a tree over n nodes (the L_i of
// the PMNB bound): two breadth-first searches.
int tree_diameter(Node n, std::span<const TreeEdge> tree);

// Adjacency lists of a tree (or forest) over n nodes.
std::vector<std::vector<Node>> tree_adjacency(Node n, std::span<const TreeEdge> tree);

}  // namespace switchyard::primitives
