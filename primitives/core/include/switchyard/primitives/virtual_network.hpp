#pragma once
// A virtual network: a connected undirected graph over the processes 0..N-1,
// on which the slot algorithms of the Varvarigos library move packets (a packet
// crosses one link per slot, store and forward). The real machine is the
// complete graph; the others (hypercube, torus, tree, any graph from a file)
// are topologies whose theorems the slot simulator checks.
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

/// A node of a virtual network; 32 bits keep schedules of 10^5-node networks compact.
using Node = std::int32_t;

/// Adjacency lists are kept in memory (one Node per direction of each link):
/// a network with more directed arcs than this is refused up front, with the
/// reason, instead of exhausting memory (the complete graph stops near 11585 nodes).
inline constexpr std::int64_t kMaxArcs = std::int64_t{1} << 27;
/// The most nodes a network may have.
inline constexpr Node kMaxNodes = Node{1} << 24;

/// Which family a network is of (graph: any other, from edges or a file).
enum class NetworkKind : std::uint8_t { complete, hypercube, torus, tree, graph };

/// The undirected, connected graph the slot algorithms route on: a node per process, adjacency lists in memory.
class VirtualNetwork {
 public:
  /// Throws InvalidArgument for n < 1 or a network over kMaxArcs.
  static VirtualNetwork complete(Node n);
  /// 2^d nodes, v adjacent to v xor 2^i. d in 0..24.
  static VirtualNetwork hypercube(int d);
  /// Wraparound mesh with the given side lengths (each >= 1): node index is
  /// mixed radix, first side fastest. A side of 2 gives one link, not two.
  static VirtualNetwork torus(std::vector<Node> sides);
  /// The complete K-ary tree over n nodes in heap order: the parent of v > 0 is (v - 1) / K.
  static VirtualNetwork tree(Node n, int k);
  /// Any connected graph; self-loops and repeated edges are dropped. `name` is what name() returns.
  static VirtualNetwork from_edges(Node n, std::span<const std::pair<Node, Node>> edges, std::string name);
  /// Matrix Market adjacency: "%%MatrixMarket matrix coordinate pattern|integer|real general|symmetric",
  /// square; every stored entry (i, j), i != j, is a link (values are ignored: a 0 is still listed,
  /// so it is a link). Errors throw InvalidArgument "source:line: what is wrong".
  static VirtualNetwork read_matrix_market(std::istream& in, const std::string& source);
  /// read_matrix_market() of the file at `path`.
  static VirtualNetwork read_matrix_market_file(const std::string& path);

  Node size() const noexcept { return static_cast<Node>(offsets_.size() - 1); }  ///< the number of nodes, N
  NetworkKind kind() const noexcept { return kind_; }  ///< the family it was built as
  /// "complete", "hypercube:4", "torus:8x8", "tree:2", or the graph's name (its file).
  const std::string& name() const noexcept { return name_; }
  /// Hypercube dimension, torus sides, tree arity (empty / 0 for other kinds).
  int dimension() const noexcept { return dimension_; }
  /// The torus's side lengths (empty for other kinds).
  std::span<const Node> sides() const noexcept { return sides_; }
  int arity() const noexcept { return arity_; }  ///< the tree's arity (0 for other kinds)

  /// Neighbours of v in increasing order.
  std::span<const Node> neighbours(Node v) const noexcept {
    return {adjacency_.data() + offsets_[v], adjacency_.data() + offsets_[v + 1]};
  }
  std::int64_t degree(Node v) const noexcept { return offsets_[v + 1] - offsets_[v]; }  ///< v's number of neighbours
  /// Undirected links.
  std::int64_t links() const noexcept { return static_cast<std::int64_t>(adjacency_.size()) / 2; }
  /// Directed arcs u -> v are numbered 0 .. 2 * links() - 1 (u's arcs are
  /// contiguous, in neighbour order): what per-link state in the simulator is indexed by.
  std::int64_t arcs() const noexcept { return static_cast<std::int64_t>(adjacency_.size()); }
  /// The arc u -> v, or -1 when u and v are not adjacent (or out of range).
  std::int64_t arc(Node u, Node v) const noexcept;
  bool adjacent(Node u, Node v) const noexcept { return arc(u, v) >= 0; }  ///< u and v share a link
  bool contains(Node v) const noexcept { return v >= 0 && v < size(); }  ///< v is a node of the network

  /// Hop distances from s (breadth-first search).
  std::vector<std::int32_t> distances_from(Node s) const;
  /// The largest distance: closed form for the regular kinds, all-pairs BFS
  /// otherwise (cached; O(N * links), fine for the files one hands the tool).
  int diameter() const;

 private:
  VirtualNetwork() = default;
  void require_connected() const;

  NetworkKind kind_ = NetworkKind::graph;
  std::string name_;
  int dimension_ = 0;
  int arity_ = 0;
  std::vector<Node> sides_;
  std::vector<std::int64_t> offsets_{0};
  std::vector<Node> adjacency_;
  mutable int diameter_ = -1;
};

}  // namespace switchyard::primitives
