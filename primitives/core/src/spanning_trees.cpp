#include "switchyard/primitives/spanning_trees.hpp"

#include <algorithm>
#include <deque>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

#include "switchyard/errors.hpp"

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
      return std::min(dist[static_cast<std::size_t>(edges_[e].first)],
                      dist[static_cast<std::size_t>(edges_[e].second)]);
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
      if (f == i)
        f = -1;
      else if (f > i)
        --f;
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
    if (*wanted < 1) throw InvalidArgument("matroid_union_trees: asked for " + std::to_string(*wanted) + " trees");
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
  if (n < 2)
    throw InvalidArgument("complete_graph_trees: K_" + std::to_string(n) + " has no spanning tree with an edge");
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

namespace {

// The trees of the product built so far: node ids are those of the final
// network restricted to the factors taken (each factor adds offset(y) to an id).
struct ProductLevel {
  std::vector<std::vector<TreeEdge>> trees;
  std::vector<TreeEdge> unused;  // a forest of exactly trees.size() links
  std::vector<Node> nodes;
};

// Orients each unused link (c, s) toward the root of its component of the
// forest: every c differs, and following c -> s always ends at a root, which
// is no c. (Two components cannot close a cycle: the forest has none.)
std::vector<TreeEdge> orient_to_roots(const std::vector<TreeEdge>& unused) {
  std::vector<TreeEdge> out(unused.size());
  std::vector<char> done(unused.size(), 0);
  for (std::size_t r = 0; r < unused.size(); ++r) {
    if (done[r]) continue;
    std::vector<Node> frontier{unused[r].second};
    while (!frontier.empty()) {
      const Node v = frontier.back();
      frontier.pop_back();
      for (std::size_t i = 0; i < unused.size(); ++i) {
        if (done[i] || (unused[i].first != v && unused[i].second != v)) continue;
        const Node w = unused[i].first == v ? unused[i].second : unused[i].first;
        done[i] = 1;
        out[i] = {w, v};
        frontier.push_back(w);
      }
    }
  }
  return out;
}

// A centre of tree t (the middle of a longest path) not in `taken`, or the
// nearest node to it that is not.
Node free_centre(const std::vector<Node>& nodes, const std::vector<TreeEdge>& t, const std::vector<char>& taken,
                 Node size) {
  const auto adj = tree_adjacency(size, t);
  const auto first = bfs_distances(adj, nodes[0]);
  Node a = nodes[0];
  for (Node v : nodes) a = first[static_cast<std::size_t>(v)] > first[static_cast<std::size_t>(a)] ? v : a;
  const auto from_a = bfs_distances(adj, a);
  Node b = a;
  for (Node v : nodes) b = from_a[static_cast<std::size_t>(v)] > from_a[static_cast<std::size_t>(b)] ? v : b;
  const auto from_b = bfs_distances(adj, b);
  const int half = from_a[static_cast<std::size_t>(b)] / 2;
  Node centre = a;
  for (Node v : nodes) {
    if (from_a[static_cast<std::size_t>(v)] == half &&
        from_b[static_cast<std::size_t>(v)] == from_a[static_cast<std::size_t>(b)] - half)
      centre = v;
  }
  const auto around = bfs_distances(adj, centre);
  Node best = -1;
  for (Node v : nodes) {
    if (!taken[static_cast<std::size_t>(v)] &&
        (best < 0 || around[static_cast<std::size_t>(v)] < around[static_cast<std::size_t>(best)]))
      best = v;
  }
  return best;
}

// G x K_2 (one link per node between the copies): each tree in both copies,
// joined by the link at a centre of the tree (a different node per tree).
ProductLevel times_link(const ProductLevel& g, Node offset, Node size) {
  ProductLevel out{std::vector<std::vector<TreeEdge>>(g.trees.size()), {}, g.nodes};
  for (Node v : g.nodes) out.nodes.push_back(v + offset);
  std::vector<char> taken(static_cast<std::size_t>(size), 0);
  for (std::size_t i = 0; i < g.trees.size(); ++i) {
    for (Node y : {Node{0}, offset}) {
      for (auto [a, b] : g.trees[i]) out.trees[i].emplace_back(a + y, b + y);
    }
    const Node c = free_centre(g.nodes, g.trees[i], taken, size);
    taken[static_cast<std::size_t>(c)] = 1;
    out.trees[i].emplace_back(c, c + offset);
  }
  return out;
}

// G x C_n, n >= 3, layers y = 0 .. n-1 at offsets[y], with G's k trees T_i and
// k unused links u_i = (c_i, s_i) (oriented to roots). Tree f = 0 gives up its
// last layer: T'_f is T_f in layers 0 .. n-2 joined by column c_f, with layer
// n-1 hung off layer 0 by the wraparound links of every column. T'_i (i > 0)
// is T_i in every layer joined by column c_i (all but its wraparound link).
// The new tree is T_f in layer n-1, every other column as a path from layer 0
// up to it, and (c_i, y) hung off (s_i, y) by u_i in layers 0 .. n-2. Left
// unused: the u_i of layer n-1 and column c_f's link n-2 - n-1, again a forest of k + 1.
ProductLevel times_cycle(const ProductLevel& g, const std::vector<Node>& offsets, Node size) {
  const auto n = static_cast<Node>(offsets.size());
  const std::size_t k = g.trees.size();
  const auto u = orient_to_roots(g.unused);
  ProductLevel out{std::vector<std::vector<TreeEdge>>(k + 1), {}, {}};
  for (Node y : offsets) {
    for (Node v : g.nodes) out.nodes.push_back(v + y);
  }
  std::vector<char> spine(static_cast<std::size_t>(size), 0);
  auto& last = out.trees[k];
  for (std::size_t i = 0; i < k; ++i) {
    const Node c = u[i].first;
    spine[static_cast<std::size_t>(c)] = 1;
    const Node layers = i == 0 ? n - 1 : n;
    for (Node y = 0; y < layers; ++y) {
      for (auto [a, b] : g.trees[i]) out.trees[i].emplace_back(a + offsets[y], b + offsets[y]);
    }
    for (Node y = 0; y + 1 < layers; ++y) out.trees[i].emplace_back(c + offsets[y], c + offsets[y + 1]);
    for (Node y = 0; y + 1 < n; ++y) last.emplace_back(c + offsets[y], u[i].second + offsets[y]);
    out.unused.emplace_back(c + offsets[n - 1], u[i].second + offsets[n - 1]);
  }
  for (Node v : g.nodes) {
    out.trees[0].emplace_back(v + offsets[n - 1], v + offsets[0]);
    if (spine[static_cast<std::size_t>(v)]) continue;
    for (Node y = 0; y + 1 < n; ++y) last.emplace_back(v + offsets[y], v + offsets[y + 1]);
  }
  for (auto [a, b] : g.trees[0]) last.emplace_back(a + offsets[n - 1], b + offsets[n - 1]);
  out.unused.emplace_back(u[0].first + offsets[n - 2], u[0].first + offsets[n - 1]);
  return out;
}

// A factor of the product: a cycle (n >= 3 offsets) or a link (2 offsets).
using Factor = std::vector<Node>;

std::vector<Factor> product_factors(const VirtualNetwork& g) {
  std::vector<Factor> cycles, links;
  if (g.kind() == NetworkKind::hypercube) {
    // Q_2j = C_4 x ... x C_4: bits 2i, 2i+1 walked in Gray order 00 01 11 10.
    for (int i = 0; i + 1 < g.dimension(); i += 2) {
      cycles.push_back({0, Node{1} << i, Node{3} << i, Node{2} << i});
    }
    if (g.dimension() % 2 == 1) links.push_back({0, Node{1} << (g.dimension() - 1)});
  } else if (g.kind() == NetworkKind::torus) {
    Node radix = 1;
    for (Node side : g.sides()) {
      Factor f;
      for (Node y = 0; y < side; ++y) f.push_back(y * radix);
      if (side >= 3)
        cycles.push_back(f);
      else if (side == 2)
        links.push_back(f);
      radix *= side;
    }
  }
  // Cycles first: each adds a tree; a link adds none, so two links or more
  // (where the maximum may be larger) are left to the general algorithm.
  if (cycles.empty() || links.size() > 1) return {};
  cycles.insert(cycles.end(), links.begin(), links.end());
  return cycles;
}

}  // namespace

bool has_cycle_product_trees(const VirtualNetwork& g) { return !product_factors(g).empty(); }

EdgeDisjointTrees cycle_product_trees(const VirtualNetwork& g) {
  const auto factors = product_factors(g);
  if (factors.empty()) {
    throw InvalidArgument("cycle_product_trees: " + g.name() +
                          " is not a hypercube or a torus with a side of 3 or more and at most one side of 2");
  }
  ProductLevel level{{{}}, {}, factors[0]};
  const auto n = static_cast<Node>(factors[0].size());
  for (Node y = 0; y + 1 < n; ++y) level.trees[0].emplace_back(factors[0][y], factors[0][y + 1]);
  level.unused.emplace_back(factors[0][n - 1], factors[0][0]);
  for (std::size_t i = 1; i < factors.size(); ++i) {
    level =
        factors[i].size() == 2 ? times_link(level, factors[i][1], g.size()) : times_cycle(level, factors[i], g.size());
  }
  return {"cycle product", std::move(level.trees)};
}

EdgeDisjointTrees edge_disjoint_spanning_trees(const VirtualNetwork& g, std::optional<int> wanted) {
  if (wanted && *wanted < 1) {
    throw InvalidArgument("edge_disjoint_spanning_trees: asked for " + std::to_string(*wanted) + " trees");
  }
  EdgeDisjointTrees out;
  if (g.kind() == NetworkKind::complete && g.size() >= 2) {
    out = complete_graph_trees(g.size());
  } else if (has_cycle_product_trees(g)) {
    out = cycle_product_trees(g);
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
      throw InvalidArgument(which + " has " + std::to_string(tree.size()) +
                            " links, not N - 1 = " + std::to_string(g.size() - 1));
    }
    for (auto [u, v] : tree) {
      if (!g.adjacent(u, v)) {
        throw InvalidArgument(which + ": " + std::to_string(u) + "-" + std::to_string(v) + " is not a link");
      }
      if (!used.insert({std::min(u, v), std::max(u, v)}).second) {
        throw InvalidArgument(which + ": link " + std::to_string(u) + "-" + std::to_string(v) + " is in two trees");
      }
    }
    const auto dist = bfs_distances(tree_adjacency(g.size(), tree), 0);
    if (std::count(dist.begin(), dist.end(), -1) > 0) throw InvalidArgument(which + " does not span the network");
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
