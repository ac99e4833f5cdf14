#pragma once
// Bipartite graph machinery behind the `optimal` and `optimal-bytes`
// schedulers. A communication matrix is a bipartite graph: senders on the left,
// receivers on the right, one edge per message. A phase is a matching.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace switchyard::schedulers::detail {

inline constexpr std::uint32_t kNoVertex = std::numeric_limits<std::uint32_t>::max();

struct BipartiteEdge {
  std::uint32_t left = 0, right = 0;
};

// An arc of a left vertex's adjacency list: the right vertex it reaches and the
// edge it belongs to (parallel edges have distinct ids).
struct Arc {
  std::uint32_t right = 0, edge = 0;
};

// Left adjacency in CSR form: the arcs of left vertex u are
// arcs[offsets[u] .. offsets[u + 1]).
struct LeftAdjacency {
  std::vector<std::uint32_t> offsets;
  std::vector<Arc> arcs;
};

// A maximum matching of the edges a caller-supplied predicate calls alive.
class BipartiteMatcher {
 public:
  BipartiteMatcher(std::uint32_t left_vertices, std::uint32_t right_vertices);

  // Hopcroft-Karp from the current matching: O(E sqrt(V)). Returns the size.
  template <class Alive>
  std::uint32_t maximize(const LeftAdjacency& adj, Alive&& alive);
  std::uint32_t size() const noexcept { return size_; }
  // The edge matched to left vertex u, or kNoVertex.
  std::uint32_t edge_of(std::uint32_t u) const { return edge_of_left_[u]; }

 private:
  template <class Alive>
  bool layer(const LeftAdjacency& adj, Alive& alive);
  // Follows the layered graph from root (Hopcroft-Karp) with an explicit
  // stack: paths can be as long as the graph, far beyond a thread's stack in
  // recursion.
  template <class Alive>
  bool search(std::uint32_t root, const LeftAdjacency& adj, Alive& alive);

  static constexpr std::uint32_t kUnreached = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t size_ = 0;
  std::vector<std::uint32_t> right_of_left_, edge_of_left_, left_of_right_;
  std::vector<std::uint32_t> level_, cursor_, stack_, queue_;
};

// Colours the edges of a bipartite multigraph with exactly Δ colours, Δ its
// largest degree (König's edge-colouring theorem), in O(E log Δ) plus one
// Hopcroft-Karp matching per odd degree met on the way down. Returns the
// colour (0..Δ-1) of every edge, in input order.
std::vector<std::uint32_t> colour_edges(std::uint32_t left_vertices, std::uint32_t right_vertices,
                                        std::span<const BipartiteEdge> edges);

// ---------------------------------------------------------------------------

template <class Alive>
bool BipartiteMatcher::layer(const LeftAdjacency& adj, Alive& alive) {
  const auto left = static_cast<std::uint32_t>(right_of_left_.size());
  queue_.clear();
  for (std::uint32_t u = 0; u < left; ++u) {
    if (right_of_left_[u] == kNoVertex) {
      level_[u] = 0;
      queue_.push_back(u);
    } else {
      level_[u] = kUnreached;
    }
  }
  bool reached_free = false;
  for (std::size_t head = 0; head < queue_.size(); ++head) {
    const std::uint32_t u = queue_[head];
    for (std::uint32_t k = adj.offsets[u]; k < adj.offsets[u + 1]; ++k) {
      const Arc& a = adj.arcs[k];
      if (!alive(a.edge)) continue;
      const std::uint32_t w = left_of_right_[a.right];
      if (w == kNoVertex) {
        reached_free = true;
      } else if (level_[w] == kUnreached) {
        level_[w] = level_[u] + 1;
        queue_.push_back(w);
      }
    }
  }
  return reached_free;
}

template <class Alive>
bool BipartiteMatcher::search(std::uint32_t root, const LeftAdjacency& adj, Alive& alive) {
  stack_.clear();
  stack_.push_back(root);
  cursor_[root] = adj.offsets[root];
  while (!stack_.empty()) {
    const std::uint32_t u = stack_.back();
    if (cursor_[u] == adj.offsets[u + 1]) {
      level_[u] = kUnreached;  // a dead end for the rest of this Hopcroft-Karp phase
      stack_.pop_back();
      if (!stack_.empty()) ++cursor_[stack_.back()];
      continue;
    }
    const Arc& a = adj.arcs[cursor_[u]];
    if (!alive(a.edge)) {
      ++cursor_[u];
      continue;
    }
    const std::uint32_t w = left_of_right_[a.right];
    if (w == kNoVertex) {
      // Augment: every vertex on the stack takes the arc it is looking at.
      // Its old partner is the right end of the arc of the vertex below it,
      // which that vertex has just claimed.
      for (std::uint32_t x : stack_) {
        const Arc& take = adj.arcs[cursor_[x]];
        right_of_left_[x] = take.right;
        edge_of_left_[x] = take.edge;
        left_of_right_[take.right] = x;
      }
      ++size_;
      return true;
    }
    if (level_[w] == level_[u] + 1) {
      cursor_[w] = adj.offsets[w];
      stack_.push_back(w);
    } else {
      ++cursor_[u];
    }
  }
  return false;
}

template <class Alive>
std::uint32_t BipartiteMatcher::maximize(const LeftAdjacency& adj, Alive&& alive) {
  const auto left = static_cast<std::uint32_t>(right_of_left_.size());
  while (layer(adj, alive)) {
    bool grew = false;
    for (std::uint32_t u = 0; u < left; ++u)
      if (right_of_left_[u] == kNoVertex && level_[u] == 0) grew |= search(u, adj, alive);
    if (!grew) break;
  }
  return size_;
}

}  // namespace switchyard::schedulers::detail
