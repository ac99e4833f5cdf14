// Virtual networks: the regular kinds' adjacency and diameter, arcs, and
// Matrix Market adjacency files (good ones, and bad ones rejected with file:line).
#include <gtest/gtest.h>
#include <switchyard/errors.hpp>

#include <sstream>
#include <stdexcept>

#include "switchyard/primitives/virtual_network.hpp"

namespace sp = switchyard::primitives;

namespace {

// The diameter by BFS from every node, to check the closed forms against.
int bfs_diameter(const sp::VirtualNetwork& g) {
  int best = 0;
  for (sp::Node s = 0; s < g.size(); ++s) {
    for (int d : g.distances_from(s)) best = std::max(best, d);
  }
  return best;
}

// Every arc u -> v has its reverse, arc() finds each listed neighbour, and nothing else.
void expect_symmetric(const sp::VirtualNetwork& g) {
  std::int64_t seen = 0;
  for (sp::Node u = 0; u < g.size(); ++u) {
    for (sp::Node v : g.neighbours(u)) {
      EXPECT_TRUE(g.adjacent(v, u)) << g.name() << ": " << u << " - " << v;
      EXPECT_EQ(g.arc(u, v), seen++) << g.name();
    }
    EXPECT_FALSE(g.adjacent(u, u));
  }
  EXPECT_EQ(seen, g.arcs());
}

std::string expect_rejected(const std::string& text) {
  std::istringstream in(text);
  try {
    (void)sp::VirtualNetwork::read_matrix_market(in, "g.mtx");
  } catch (const switchyard::InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

}  // namespace

TEST(VirtualNetwork, CompleteGraph) {
  const auto g = sp::VirtualNetwork::complete(7);
  EXPECT_EQ(g.size(), 7);
  EXPECT_EQ(g.links(), 21);
  EXPECT_EQ(g.diameter(), 1);
  expect_symmetric(g);
  EXPECT_EQ(sp::VirtualNetwork::complete(1).diameter(), 0);
}

TEST(VirtualNetwork, Hypercube) {
  for (int d : {0, 1, 3, 6}) {
    const auto g = sp::VirtualNetwork::hypercube(d);
    EXPECT_EQ(g.size(), 1 << d);
    EXPECT_EQ(g.links(), (std::int64_t{1} << d) * d / 2);
    EXPECT_EQ(g.diameter(), d);
    EXPECT_EQ(bfs_diameter(g), d);
    expect_symmetric(g);
  }
  EXPECT_TRUE(sp::VirtualNetwork::hypercube(4).adjacent(5, 13));
  EXPECT_FALSE(sp::VirtualNetwork::hypercube(4).adjacent(5, 6));
}

TEST(VirtualNetwork, TorusIncludingSidesOfOneAndTwo) {
  for (const auto& sides : {std::vector<sp::Node>{5, 4}, {3, 3, 3}, {2, 7}, {1, 6}, {8}}) {
    const auto g = sp::VirtualNetwork::torus(sides);
    EXPECT_EQ(g.diameter(), bfs_diameter(g)) << g.name();
    expect_symmetric(g);
  }
  const auto g = sp::VirtualNetwork::torus({5, 4});
  EXPECT_EQ(g.name(), "torus:5x4");
  EXPECT_EQ(g.links(), 40);  // 2 links per node, 2 dimensions
  EXPECT_TRUE(g.adjacent(0, 4));  // wraparound along the first side
  EXPECT_TRUE(g.adjacent(0, 15));  // and along the second
  EXPECT_EQ(sp::VirtualNetwork::torus({2, 2}).links(), 4);  // a side of 2: one link, not two
}

TEST(VirtualNetwork, KaryTree) {
  const auto g = sp::VirtualNetwork::tree(13, 3);
  EXPECT_EQ(g.links(), 12);
  EXPECT_EQ(g.diameter(), 4);  // leaf 4 .. root .. leaf 12
  EXPECT_EQ(g.diameter(), bfs_diameter(g));
  EXPECT_TRUE(g.adjacent(0, 3));
  EXPECT_TRUE(g.adjacent(3, 12));
  expect_symmetric(g);
}

TEST(VirtualNetwork, RefusesWhatDoesNotFitUpFront) {
  EXPECT_THROW((void)sp::VirtualNetwork::complete(100000), switchyard::InvalidArgument);
  EXPECT_THROW((void)sp::VirtualNetwork::hypercube(30), switchyard::InvalidArgument);
  EXPECT_THROW((void)sp::VirtualNetwork::torus({0, 4}), switchyard::InvalidArgument);
  EXPECT_THROW((void)sp::VirtualNetwork::complete(0), switchyard::InvalidArgument);
  EXPECT_THROW((void)sp::VirtualNetwork::tree(5, 0), switchyard::InvalidArgument);
  try {
    (void)sp::VirtualNetwork::complete(100000);
  } catch (const switchyard::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit in memory"), std::string::npos) << e.what();
  }
}

TEST(VirtualNetwork, MatrixMarketSymmetricPattern) {
  // A 5-cycle stored as a lower triangle, with a comment and a self-loop (dropped).
  std::istringstream in(
      "%%MatrixMarket matrix coordinate pattern symmetric\n% ring\n5 5 6\n2 1\n3 2\n4 3\n5 4\n5 1\n3 3\n");
  const auto g = sp::VirtualNetwork::read_matrix_market(in, "ring.mtx");
  EXPECT_EQ(g.size(), 5);
  EXPECT_EQ(g.links(), 5);
  EXPECT_EQ(g.diameter(), 2);
  EXPECT_EQ(g.name(), "ring.mtx");
  expect_symmetric(g);
}

TEST(VirtualNetwork, MatrixMarketGeneralRealBothDirections) {
  std::istringstream in("%%MatrixMarket matrix coordinate real general\n3 3 4\n1 2 0.5\n2 1 0.5\n2 3 1e3\n3 2 7\n");
  const auto g = sp::VirtualNetwork::read_matrix_market(in, "path.mtx");
  EXPECT_EQ(g.links(), 2);
  EXPECT_EQ(g.diameter(), 2);
}

TEST(VirtualNetwork, MatrixMarketErrorsNameFileAndLine) {
  EXPECT_EQ(expect_rejected(""), "g.mtx:1: empty file: expected a %%MatrixMarket header");
  EXPECT_NE(expect_rejected("%%MatrixMarket matrix array real general\n2 2\n").find("g.mtx:1: expected"),
            std::string::npos);
  EXPECT_EQ(expect_rejected("%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 2\n"),
            "g.mtx:2: an adjacency matrix is square, this one is 3 x 4");
  EXPECT_EQ(expect_rejected("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 x\n"),
            "g.mtx:4: column 'x' is not a non-negative whole number");
  EXPECT_EQ(expect_rejected("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n4 1\n"),
            "g.mtx:4: row 4 is outside 1..3");
  EXPECT_EQ(expect_rejected("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2\n"),
            "g.mtx:3: expected 'row column value', found '1 2'");
  EXPECT_EQ(expect_rejected("%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n2 1 one\n"),
            "g.mtx:3: value 'one' is not a number");
  EXPECT_EQ(expect_rejected("%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n"),
            "g.mtx:4: the header announces 3 entries, the file has 2");
  EXPECT_NE(
      expect_rejected("%%MatrixMarket matrix coordinate pattern general\n4 4 2\n1 2\n3 4\n").find("not connected"),
      std::string::npos);
}

TEST(VirtualNetwork, MissingFileIsNamed) {
  try {
    (void)sp::VirtualNetwork::read_matrix_market_file("/nonexistent/g.mtx");
    ADD_FAILURE();
  } catch (const switchyard::InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/g.mtx: cannot open the adjacency file");
  }
}

namespace {

// A file that is no Matrix Market text fails on its first line at once (a
// line is read up to 1024 characters), and what is echoed stays one line.
TEST(VirtualNetworkFile, NonTextFailsAtOnce) {
  EXPECT_THROW(switchyard::primitives::VirtualNetwork::read_matrix_market_file("/dev/zero"),
               switchyard::InvalidArgument);
  std::istringstream in("%%MatrixMarket\x1b[2J matrix\n");
  try {
    (void)switchyard::primitives::VirtualNetwork::read_matrix_market(in, "odd.mtx");
    ADD_FAILURE() << "no error";
  } catch (const switchyard::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("odd.mtx:1: expected"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos);
  }
}

}  // namespace
