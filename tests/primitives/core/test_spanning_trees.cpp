// Edge-disjoint spanning trees: the explicit constructions, the matroid union
// (its count checked against the Nash-Williams-Tutte formula by brute force on
// small graphs), the checker and tree diameters.
#include <gtest/gtest.h>
#include <switchyard/errors.hpp>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "switchyard/primitives/random_graph.hpp"
#include "switchyard/primitives/spanning_trees.hpp"

namespace sp = switchyard::primitives;

namespace {

// Nash-Williams / Tutte: the maximum number of edge-disjoint spanning trees is
// the minimum over partitions P of the nodes (|P| >= 2) of
// floor(links between parts / (|P| - 1)). Enumerates every partition (n <= 8).
int nash_williams(const sp::VirtualNetwork& g) {
  const sp::Node n = g.size();
  std::vector<int> part(static_cast<std::size_t>(n), 0);
  int best = static_cast<int>(g.links());
  std::function<void(sp::Node, int)> assign = [&](sp::Node v, int parts) {
    if (v == n) {
      if (parts < 2) return;
      std::int64_t crossing = 0;
      for (sp::Node u = 0; u < n; ++u) {
        for (sp::Node w : g.neighbours(u))
          crossing += u < w && part[static_cast<std::size_t>(u)] != part[static_cast<std::size_t>(w)];
      }
      best = std::min(best, static_cast<int>(crossing / (parts - 1)));
      return;
    }
    for (int p = 0; p <= parts; ++p) {
      part[static_cast<std::size_t>(v)] = p;
      assign(v + 1, std::max(parts, p + 1));
    }
  };
  assign(0, 0);
  return best;
}

}  // namespace

TEST(SpanningTrees, CompleteGraphHasFloorHalfDoubleStars) {
  for (sp::Node n = 2; n <= 41; ++n) {
    const auto g = sp::VirtualNetwork::complete(n);
    const auto trees = sp::complete_graph_trees(n);
    EXPECT_EQ(trees.count(), n / 2);
    sp::check_edge_disjoint_spanning_trees(g, trees);
    for (const auto& t : trees.trees) EXPECT_LE(sp::tree_diameter(n, t), 3);
  }
  EXPECT_THROW(sp::complete_graph_trees(1), switchyard::InvalidArgument);
}

TEST(SpanningTrees, CycleProductGivesTheMaximumOnHypercubes) {
  for (int d = 2; d <= 14; ++d) {
    const auto g = sp::VirtualNetwork::hypercube(d);
    const auto trees = sp::cycle_product_trees(g);
    EXPECT_EQ(trees.count(), d / 2) << d;
    sp::check_edge_disjoint_spanning_trees(g, trees);
    for (const auto& t : trees.trees) EXPECT_LE(sp::tree_diameter(g.size(), t), 5 * d) << d;
  }
}

TEST(SpanningTrees, CycleProductGivesOneTreePerCycleOfATorus) {
  for (auto [a, b] : {std::pair<sp::Node, sp::Node>{3, 3}, {3, 7}, {8, 4}, {8, 8}, {64, 64}}) {
    const auto g = sp::VirtualNetwork::torus({a, b});
    const auto trees = sp::cycle_product_trees(g);
    ASSERT_EQ(trees.count(), 2);
    sp::check_edge_disjoint_spanning_trees(g, trees);
    std::vector<int> diameters = {sp::tree_diameter(g.size(), trees.trees[0]),
                                  sp::tree_diameter(g.size(), trees.trees[1])};
    std::sort(diameters.begin(), diameters.end());
    EXPECT_EQ(diameters, (std::vector<int>{std::min(2 * a + b, a + 2 * b) - 3, std::max(2 * a + b, a + 2 * b) - 3}));
  }
  for (const auto& sides :
       std::vector<std::vector<sp::Node>>{{4, 4, 4}, {3, 4, 5, 6}, {5, 2}, {2, 3, 4}, {16, 16, 16}, {3, 1, 3}}) {
    const auto g = sp::VirtualNetwork::torus(sides);
    const auto trees = sp::cycle_product_trees(g);
    const auto cycles = std::count_if(sides.begin(), sides.end(), [](sp::Node s) { return s >= 3; });
    EXPECT_EQ(trees.count(), cycles) << g.name();
    sp::check_edge_disjoint_spanning_trees(g, trees);
    int perimeter = 0;
    for (auto s : sides) perimeter += s;
    for (const auto& t : trees.trees) EXPECT_LE(sp::tree_diameter(g.size(), t), 2 * perimeter) << g.name();
  }
  EXPECT_THROW(sp::cycle_product_trees(sp::VirtualNetwork::complete(8)), switchyard::InvalidArgument);
  EXPECT_THROW(sp::cycle_product_trees(sp::VirtualNetwork::torus({2, 2, 3})), switchyard::InvalidArgument);
  EXPECT_THROW(sp::cycle_product_trees(sp::VirtualNetwork::hypercube(1)), switchyard::InvalidArgument);
}

TEST(SpanningTrees, MatroidUnionFindsTheKnownMaxima) {
  for (int d = 1; d <= 8; ++d) {
    const auto g = sp::VirtualNetwork::hypercube(d);
    const auto trees = sp::matroid_union_trees(g);
    EXPECT_EQ(trees.count(), d / 2 == 0 ? 1 : d / 2) << "hypercube " << d;  // Q_1 is one link: one tree
    sp::check_edge_disjoint_spanning_trees(g, trees);
  }
  for (sp::Node n = 2; n <= 14; ++n) {
    const auto g = sp::VirtualNetwork::complete(n);
    const auto trees = sp::matroid_union_trees(g);
    EXPECT_EQ(trees.count(), n / 2) << "K_" << n;
    sp::check_edge_disjoint_spanning_trees(g, trees);
  }
  for (const auto& sides :
       std::vector<std::vector<sp::Node>>{{3, 3}, {5, 4}, {8, 8}, {3, 3, 3}, {4, 4, 4}, {3, 3, 3, 3}}) {
    const auto g = sp::VirtualNetwork::torus(sides);
    const auto trees = sp::matroid_union_trees(g);
    EXPECT_EQ(trees.count(), static_cast<int>(sides.size())) << g.name();
    sp::check_edge_disjoint_spanning_trees(g, trees);
  }
}

TEST(SpanningTrees, MatroidUnionMatchesNashWilliamsOnRandomGraphs) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const sp::Node n = 5 + static_cast<sp::Node>(seed % 4);
    const auto g = sp::random_connected_graph(n, static_cast<std::int64_t>(seed % 19), seed);
    const auto trees = sp::matroid_union_trees(g);
    sp::check_edge_disjoint_spanning_trees(g, trees);
    EXPECT_EQ(trees.count(), nash_williams(g)) << g.name();
  }
}

TEST(SpanningTrees, UnionOfRandomDisjointTreesIsRecovered) {
  // k random spanning trees of K_n, each drawn (random Kruskal) from the links
  // the earlier ones left: the union has exactly k (n - 1) links, so exactly k trees.
  std::mt19937_64 rng(9);
  for (int k : {2, 3, 5}) {
    const sp::Node n = 60;
    std::vector<std::pair<sp::Node, sp::Node>> free_links, links;
    for (sp::Node u = 0; u < n; ++u) {
      for (sp::Node v = u + 1; v < n; ++v) free_links.emplace_back(u, v);
    }
    for (int t = 0; t < k; ++t) {
      std::shuffle(free_links.begin(), free_links.end(), rng);
      std::vector<sp::Node> leader(static_cast<std::size_t>(n));
      std::iota(leader.begin(), leader.end(), sp::Node{0});
      const auto find = [&](sp::Node v) {
        while (leader[static_cast<std::size_t>(v)] != v) v = leader[static_cast<std::size_t>(v)];
        return v;
      };
      std::vector<std::pair<sp::Node, sp::Node>> rest;
      for (auto [u, v] : free_links) {
        const sp::Node a = find(u), b = find(v);
        if (a != b) {
          leader[static_cast<std::size_t>(a)] = b;
          links.emplace_back(u, v);
        } else {
          rest.emplace_back(u, v);
        }
      }
      free_links = rest;
    }
    const auto g = sp::VirtualNetwork::from_edges(n, links, "union of random trees");
    ASSERT_EQ(g.links(), std::int64_t{k} * (n - 1));
    const auto trees = sp::matroid_union_trees(g);
    sp::check_edge_disjoint_spanning_trees(g, trees);
    EXPECT_EQ(trees.count(), k);
    EXPECT_EQ(sp::matroid_union_trees(g, 1).count(), 1);
  }
}

TEST(SpanningTrees, WantedCountIsCappedAtTheMaximum) {
  const auto g = sp::VirtualNetwork::hypercube(6);
  EXPECT_EQ(sp::matroid_union_trees(g, 2).count(), 2);
  EXPECT_EQ(sp::matroid_union_trees(g, 10).count(), 3);
  EXPECT_EQ(sp::edge_disjoint_spanning_trees(sp::VirtualNetwork::complete(10), 3).count(), 3);
  EXPECT_THROW(sp::matroid_union_trees(g, 0), switchyard::InvalidArgument);
  // A bridge allows a single tree.
  const std::vector<std::pair<sp::Node, sp::Node>> barbell = {{0, 1}, {1, 2}, {2, 0}, {2, 3}, {3, 4}, {4, 5}, {5, 3}};
  EXPECT_EQ(sp::matroid_union_trees(sp::VirtualNetwork::from_edges(6, barbell, "barbell")).count(), 1);
}

TEST(SpanningTrees, BestConstructionPerKind) {
  EXPECT_EQ(sp::edge_disjoint_spanning_trees(sp::VirtualNetwork::complete(9)).construction, "double stars");
  EXPECT_EQ(sp::edge_disjoint_spanning_trees(sp::VirtualNetwork::torus({5, 6})).construction, "cycle product");
  EXPECT_EQ(sp::edge_disjoint_spanning_trees(sp::VirtualNetwork::hypercube(5)).construction, "cycle product");
  EXPECT_EQ(sp::edge_disjoint_spanning_trees(sp::VirtualNetwork::torus({2, 2, 3})).construction, "matroid union");
}

TEST(SpanningTrees, CheckerRejectsSharedMissingAndForeignLinks) {
  const auto g = sp::VirtualNetwork::torus({3, 3});
  auto trees = sp::cycle_product_trees(g);
  auto shared = trees;
  shared.trees[1][0] = shared.trees[0][0];
  EXPECT_THROW(sp::check_edge_disjoint_spanning_trees(g, shared), switchyard::InvalidArgument);
  auto short_tree = trees;
  short_tree.trees[0].pop_back();
  EXPECT_THROW(sp::check_edge_disjoint_spanning_trees(g, short_tree), switchyard::InvalidArgument);
  auto foreign = trees;
  foreign.trees[0][0] = {0, 4};  // a diagonal, not a link
  EXPECT_THROW(sp::check_edge_disjoint_spanning_trees(g, foreign), switchyard::InvalidArgument);
  auto cycle = trees;  // N - 1 links with a cycle cannot span
  cycle.trees[0] = {{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}, {6, 7}, {7, 8}};
  EXPECT_THROW(sp::check_edge_disjoint_spanning_trees(g, cycle), switchyard::InvalidArgument);
}

TEST(SpanningTrees, TreeDiameter) {
  std::vector<sp::TreeEdge> path, star;
  for (sp::Node v = 1; v < 10; ++v) {
    path.emplace_back(v - 1, v);
    star.emplace_back(0, v);
  }
  EXPECT_EQ(sp::tree_diameter(10, path), 9);
  EXPECT_EQ(sp::tree_diameter(10, star), 2);
  EXPECT_EQ(sp::tree_diameter(1, {}), 0);
}
