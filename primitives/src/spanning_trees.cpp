#include "switchyard/primitives/spanning_trees.hpp"

#include <algorithm>
#include <deque>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

namespace switchyard::primitives {

std::vector<std::vector<Node>> tree_adjacency(Node n, std::span<const TreeEdge> tree) {
  std::vector<std::vector<Node>> adj(static_cast<std::size_t>(n));
  for (const auto& [u, v] : tree) {
    adj[static_cast<std::size_t>(u)].push_back(v);
    adj[static_cast<std::size_t>(v)].push_back(u);
  }
  return adj;
}

namespace {

// Distances from s in a graph given as adjacency lists (-1: unreached).
std::vector<int> bfs_distances(const std::vector<std::vector<Node>>& adj, Node s) {
  std::vector<int> dist(adj.size(), -1);
  std::deque<Node> queue{s};
  dist[static_cast<std::size_t>(s)] = 0;
  while (!queue.empty()) {
    const Node v = queue.front();
    queue.pop_front();
    for (Node w : adj[static_cast<std::size_t>(v)]) {
      if (dist[static_cast<std::size_t>(w)] < 0) {
        dist[static_cast<std::size_t>(w)] = dist[static_cast<std::size_t>(v)] + 1;
        queue.push_back(w);
      }
    }
  }
  return dist;
}

std::vector<TreeEdge> network_edges(const VirtualNetwork& g) {
  std::vector<TreeEdge> edges;
  edges.reserve(static_cast<std::size_t>(g.links()));
  for (Node u = 0; u < g.size(); ++u) {
    for (Node v : g.neighbours(u)) {
      if (u < v) edges.emplace_back(u, v);
    }
  }
  return edges;
}

// The forests of a matroid partition, each kept rooted (parent edge, depth,
// component) so that the cycle an edge closes is found by climbing.
class ForestPartition {
 public:
  ForestPartition(Node n, std::vector<TreeEdge> edges, int k)
      : n_(n), edges_(std::move(edges)), forest_of_(edges_.size(), -1), forests_(static_cast<std::size_t>(k)) {}

  // Assigns edges greedily (breadth-first from node 0, the forests taken in
  // turn so that each grows evenly and stays shallow), then augments.
  void partition(const VirtualNetwork& g) {
    const auto dist = g.distances_from(0);
    std::vector<std::size_t> order(edges_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto near = [&](std::size_t e) {
      return std::min(dist[static_cast<std::size_t>(edges_[e].first)], dist[static_cast<std::size_t>(edges_[e].second)]);
    };
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return near(a) < near(b); });
    std::vector<std::vector<Node>> leader(forests_.size(), std::vector<Node>(static_cast<std::size_t>(n_)));
    for (auto& l : leader) std::iota(l.begin(), l.end(), Node{0});
    std::size_t turn = 0;
    for (std::size_t e : order) {
      if (forest_of_[e] >= 0) continue;
      for (std::size_t j = 0; j < forests_.size(); ++j) {
        const std::size_t i = (turn + j) % forests_.size();
        const Node a = find(leader[i], edges_[e].first);
        const Node b = find(leader[i], edges_[e].second);
        if (a == b) continue;
        leader[i][static_cast<std::size_t>(a)] = b;
        forest_of_[e] = static_cast<int>(i);
        ++turn;
        break;
      }
    }
    for (std::size_t i = 0; i < forests_.size(); ++i) rebuild(static_cast<int>(i));
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      // One pass suffices: an edge no augmenting path inserts lies in the
      // span of the union, which only grows.
      if (forest_of_[e] < 0) augment(e);
    }
  }

  std::int64_t size(int i) const { return forests_[static_cast<std::size_t>(i)].edges; }
  int count() const { return static_cast<int>(forests_.size()); }
  // Frees forest i's edges and removes it.
  void drop(int i) {
    for (auto& f : forest_of_) {
      if (f == i) f = -1;
      else if (f > i) --f;
    }
    forests_.erase(forests_.begin() + i);
  }
  std::vector<std::vector<TreeEdge>> trees() const {
    std::vector<std::vector<TreeEdge>> out(forests_.size());
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      if (forest_of_[e] >= 0) out[static_cast<std::size_t>(forest_of_[e])].push_back(edges_[e]);
    }
    return out;
  }

 private:
  struct Forest {
    std::vector<std::int64_t> parent_edge;  // -1 at a root
    std::vector<int> depth;
    std::vector<Node> component;
    std::int64_t edges = 0;
  };

  static Node find(std::vector<Node>& leader, Node v) {
    while (leader[static_cast<std::size_t>(v)] != v) {
      leader[static_cast<std::size_t>(v)] = leader[static_cast<std::size_t>(leader[static_cast<std::size_t>(v)])];
      v = leader[static_cast<std::size_t>(v)];
    }
    return v;
  }
  Node other(std::size_t e, Node v) const { return edges_[e].first == v ? edges_[e].second : edges_[e].first; }

  void rebuild(int i);
  void augment(std::size_t start);
  // The edges of forest i on the path between u and v (same component).
  std::vector<std::int64_t> path(int i, Node u, Node v) const;

  Node n_;
  std::vector<TreeEdge> edges_;
  std::vector<int> forest_of_;
  std::vector<Forest> forests_;
};

void ForestPartition::rebuild(int i) {
  auto& f = forests_[static_cast<std::size_t>(i)];
  const auto n = static_cast<std::size_t>(n_);
  std::vector<std::vector<std::int64_t>> incident(n);
  f.edges = 0;
  for (std::size_t e = 0; e < edges_.size(); ++e) {
    if (forest_of_[e] != i) continue;
    incident[static_cast<std::size_t>(edges_[e].first)].push_back(static_cast<std::int64_t>(e));
    incident[static_cast<std::size_t>(edges_[e].second)].push_back(static_cast<std::int64_t>(e));
    ++f.edges;
  }
  f.parent_edge.assign(n, -1);
  f.depth.assign(n, -1);
  f.component.assign(n, -1);
  std::int64_t reached_edges = 0;
  for (Node root = 0; root < n_; ++root) {
    if (f.depth[static_cast<std::size_t>(root)] >= 0) continue;
    std::deque<Node> queue{root};
    f.depth[static_cast<std::size_t>(root)] = 0;
    f.component[static_cast<std::size_t>(root)] = root;
    while (!queue.empty()) {
      const Node v = queue.front();
      queue.pop_front();
      for (auto e : incident[static_cast<std::size_t>(v)]) {
        if (e == f.parent_edge[static_cast<std::size_t>(v)]) continue;
        const Node w = other(static_cast<std::size_t>(e), v);
        if (f.depth[static_cast<std::size_t>(w)] >= 0) {
          throw std::logic_error("matroid union: forest " + std::to_string(i) + " has a cycle");
        }
        f.parent_edge[static_cast<std::size_t>(w)] = e;
        f.depth[static_cast<std::size_t>(w)] = f.depth[static_cast<std::size_t>(v)] + 1;
        f.component[static_cast<std::size_t>(w)] = root;
        ++reached_edges;
        queue.push_back(w);
      }
    }
  }
  if (reached_edges != f.edges) throw std::logic_error("matroid union: forest " + std::to_string(i) + " has a cycle");
}

std::vector<std::int64_t> ForestPartition::path(int i, Node u, Node v) const {
  const auto& f = forests_[static_cast<std::size_t>(i)];
  std::vector<std::int64_t> up, down;
  while (u != v) {
    if (f.depth[static_cast<std::size_t>(u)] >= f.depth[static_cast<std::size_t>(v)]) {
      const auto e = f.parent_edge[static_cast<std::size_t>(u)];
      up.push_back(e);
      u = other(static_cast<std::size_t>(e), u);
    } else {
      const auto e = f.parent_edge[static_cast<std::size_t>(v)];
      down.push_back(e);
      v = other(static_cast<std::size_t>(e), v);
    }
  }
  up.insert(up.end(), down.rbegin(), down.rend());
  return up;
}

// Edmonds' matroid partitioning step: breadth-first over edges, where edge y
// in forest i gets the label (x, i) when x would close a cycle through y in
// forest i (x may replace y there). The first edge that joins two components
// of some forest ends a shortest augmenting path: it enters that forest and
// each edge on the path moves to the forest of the one it replaces.
void ForestPartition::augment(std::size_t start) {
  constexpr std::int64_t kUnlabelled = -2;
  std::vector<std::int64_t> label(edges_.size(), kUnlabelled);
  label[start] = -1;
  std::deque<std::size_t> queue{start};
  while (!queue.empty()) {
    const std::size_t x = queue.front();
    queue.pop_front();
    const auto [a, b] = edges_[x];
    for (int i = 0; i < count(); ++i) {
      if (forest_of_[x] == i) continue;
      const auto& f = forests_[static_cast<std::size_t>(i)];
      if (f.component[static_cast<std::size_t>(a)] != f.component[static_cast<std::size_t>(b)]) {
        std::set<int> changed;
        std::size_t cur = x;
        int target = i;
        for (;;) {
          const int old = forest_of_[cur];
          forest_of_[cur] = target;
          changed.insert(target);
          if (old < 0) break;
          cur = static_cast<std::size_t>(label[cur]);
          target = old;
        }
        for (int c : changed) rebuild(c);
        return;
      }
      for (auto y : path(i, a, b)) {
        if (label[static_cast<std::size_t>(y)] != kUnlabelled) continue;
        label[static_cast<std::size_t>(y)] = static_cast<std::int64_t>(x);
        queue.push_back(static_cast<std::size_t>(y));
      }
    }
  }
}

}  // namespace

EdgeDisjointTrees matroid_union_trees(const VirtualNetwork& g, std::optional<int> wanted) {
  const Node n = g.size();
  EdgeDisjointTrees out{"matroid union", {}};
  if (n <= 1) return out;
  std::int64_t min_degree = g.degree(0);
  for (Node v = 1; v < n; ++v) min_degree = std::min(min_degree, g.degree(v));
  std::int64_t k = std::min<std::int64_t>(min_degree, g.links() / (n - 1));
  if (wanted) {
    if (*wanted < 1) throw std::invalid_argument("matroid_union_trees: asked for " + std::to_string(*wanted) + " trees");
    k = std::min<std::int64_t>(k, *wanted);
  }
  if (k == 0) return out;
  ForestPartition forests(n, network_edges(g), static_cast<int>(k));
  for (;;) {
    forests.partition(g);
    std::int64_t total = 0;
    int smallest = 0;
    for (int i = 0; i < forests.count(); ++i) {
      total += forests.size(i);
      if (forests.size(i) < forests.size(smallest)) smallest = i;
    }
    if (total == static_cast<std::int64_t>(forests.count()) * (n - 1)) break;
    // The union cannot hold k spanning trees: k - 1 is the next candidate,
    // and augmenting from the k - 1 forests left reaches their maximum.
    forests.drop(smallest);
    if (forests.count() == 0) break;
  }
  out.trees = forests.trees();
  return out;
}

EdgeDisjointTrees complete_graph_trees(Node n) {
  if (n < 2) throw std::invalid_argument("complete_graph_trees: K_" + std::to_string(n) + " has no spanning tree with an edge");
  const Node m = n / 2;
  EdgeDisjointTrees out{"double stars", std::vector<std::vector<TreeEdge>>(static_cast<std::size_t>(m))};
  for (Node i = 0; i < m; ++i) {
    auto& tree = out.trees[static_cast<std::size_t>(i)];
    tree.emplace_back(i, i + m);
    for (Node j = 0; j < m; ++j) {
      if (j == i) continue;
      if (i < j) {
        tree.emplace_back(i, j);
        tree.emplace_back(i + m, j + m);
      } else {
        tree.emplace_back(i, j + m);
        tree.emplace_back(i + m, j);
      }
    }
    if (n % 2 == 1) tree.emplace_back(i, n - 1);
  }
  return out;
}

EdgeDisjointTrees torus2d_trees(Node n1, Node n2) {
  if (n1 < 3 || n2 < 3) {
    throw std::invalid_argument("torus2d_trees: sides " + std::to_string(n1) + "x" + std::to_string(n2) +
                                " (each must be at least 3)");
  }
  const auto at = [n1](Node x, Node y) { return x + n1 * y; };
  EdgeDisjointTrees out{"2-d torus combs", std::vector<std::vector<TreeEdge>>(2)};
  auto& a = out.trees[0];
  auto& b = out.trees[1];
  for (Node y = 0; y + 1 < n2; ++y) {
    for (Node x = 0; x + 1 < n1; ++x) a.emplace_back(at(x, y), at(x + 1, y));
    a.emplace_back(at(0, y), at(0, y + 1));
  }
  for (Node x = 1; x < n1; ++x) a.emplace_back(at(x, n2 - 1), at(x, 0));
  for (Node x = 1; x < n1; ++x) {
    for (Node y = 0; y + 1 < n2; ++y) b.emplace_back(at(x, y), at(x, y + 1));
  }
  for (Node x = 1; x + 1 < n1; ++x) b.emplace_back(at(x, n2 - 1), at(x + 1, n2 - 1));
  for (Node y = 0; y < n2; ++y) b.emplace_back(at(n1 - 1, y), at(0, y));
  return out;
}

EdgeDisjointTrees edge_disjoint_spanning_trees(const VirtualNetwork& g, std::optional<int> wanted) {
  if (wanted && *wanted < 1) {
    throw std::invalid_argument("edge_disjoint_spanning_trees: asked for " + std::to_string(*wanted) + " trees");
  }
  EdgeDisjointTrees out;
  if (g.kind() == NetworkKind::complete && g.size() >= 2) {
    out = complete_graph_trees(g.size());
  } else if (g.kind() == NetworkKind::torus && g.sides().size() == 2 && g.sides()[0] >= 3 && g.sides()[1] >= 3) {
    out = torus2d_trees(g.sides()[0], g.sides()[1]);
  } else {
    return matroid_union_trees(g, wanted);
  }
  if (wanted && *wanted < out.count()) out.trees.resize(static_cast<std::size_t>(*wanted));
  return out;
}

void check_edge_disjoint_spanning_trees(const VirtualNetwork& g, const EdgeDisjointTrees& trees) {
  std::set<TreeEdge> used;
  for (int i = 0; i < trees.count(); ++i) {
    const auto& tree = trees.trees[static_cast<std::size_t>(i)];
    const std::string which = trees.construction + " tree " + std::to_string(i);
    if (static_cast<Node>(tree.size()) != g.size() - 1) {
      throw std::invalid_argument(which + " has " + std::to_string(tree.size()) + " links, not N - 1 = " +
                             std::to_string(g.size() - 1));
    }
    for (auto [u, v] : tree) {
      if (!g.adjacent(u, v)) {
        throw std::invalid_argument(which + ": " + std::to_string(u) + "-" + std::to_string(v) + " is not a link");
      }
      if (!used.insert({std::min(u, v), std::max(u, v)}).second) {
        throw std::invalid_argument(which + ": link " + std::to_string(u) + "-" + std::to_string(v) + " is in two trees");
      }
    }
    const auto dist = bfs_distances(tree_adjacency(g.size(), tree), 0);
    if (std::count(dist.begin(), dist.end(), -1) > 0) throw std::invalid_argument(which + " does not span the network");
  }
}

int tree_diameter(Node n, std::span<const TreeEdge> tree) {
  if (n <= 1) return 0;
  const auto adj = tree_adjacency(n, tree);
  const auto first = bfs_distances(adj, 0);
  const auto far = static_cast<Node>(std::max_element(first.begin(), first.end()) - first.begin());
  const auto second = bfs_distances(adj, far);
  return *std::max_element(second.begin(), second.end());
}

}  // namespace switchyard::primitives
