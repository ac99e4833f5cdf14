// Local data descriptors (Guo-Nakata-Yamashita §3): index sets, the
// closed-form intersection against brute force, and the multi-dimensional LDD
// as a Cartesian product (Lemma 2).

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <switchyard/errors.hpp>
#include <switchyard/schedulers/redistribution/layout.hpp>
#include <switchyard/schedulers/redistribution/ldd.hpp>
#include <vector>

namespace {

using namespace switchyard;
using namespace switchyard::schedulers::redistribution;

std::vector<Index> brute_intersection(const LddSet& a, const LddSet& c) {
  const auto x = index_set(a), y = index_set(c);
  std::vector<Index> out;
  std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
  return out;
}

// The pieces are disjoint: their index sets, concatenated and sorted, have no repeats.
void expect_disjoint(const LddSet& pieces) {
  std::vector<Index> all;
  for (const Ldd& d : pieces) {
    const auto s = index_set(d);
    all.insert(all.end(), s.begin(), s.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "two pieces share an index";
}

TEST(Ldd, IndexSetFollowsTheDefinition) {
  const Ldd d{3, 2, 7, 3};  // {3,4}, {10,11}, {17,18}
  EXPECT_EQ(index_set(d), (std::vector<Index>{3, 4, 10, 11, 17, 18}));
  EXPECT_EQ(d.size(), 6);
  for (Index i = 0; i < 25; ++i) {
    const auto s = index_set(d);
    EXPECT_EQ(d.contains(i), std::find(s.begin(), s.end(), i) != s.end()) << i;
  }
  EXPECT_TRUE((Ldd{5, 0, 3, 4}).empty());
  EXPECT_TRUE((Ldd{5, 3, 3, 0}).empty());
  EXPECT_THROW(intersect(Ldd{0, 4, 3, 2}, Ldd{0, 1, 1, 1}), InvalidArgument);  // stride below the block length
}

// The paper's running example: cyclic(6) and cyclic(2) on 4 processes, 120000 elements.
TEST(Ldd, Cyclic6ToCyclic2IsOnePiecePerPair) {
  const Ldd src{6, 6, 24, 5000};  // process 1 under cyclic(6)@4
  for (Index j = 0; j < 4; ++j) {
    const Ldd dst{2 * j, 2, 8, 15000};
    const LddSet pieces = intersect(src, dst);
    const bool sends = j != 2;  // process 1 sends to 3, 0, 1
    ASSERT_EQ(pieces.size(), sends ? 1u : 0u) << j;
    if (sends) {
      EXPECT_EQ(pieces[0].b, 2);
      EXPECT_EQ(pieces[0].s, 24);  // lcm(24, 8)
      EXPECT_EQ(pieces[0].n, 5000);
      EXPECT_EQ(index_set(pieces), brute_intersection({src}, {dst}));
    }
  }
}

// A BLOCK against CYCLIC(1) is one LDD, not one piece per element.
TEST(Ldd, BlockAgainstCyclicIsOneStridedPiece) {
  const Ldd block{250, 250, 1000, 1};
  const Ldd cyclic{3, 1, 4, 250};
  const LddSet pieces = intersect(block, cyclic);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0], (Ldd{251, 1, 4, 63}));
  EXPECT_EQ(index_set(pieces), brute_intersection({block}, {cyclic}));
  EXPECT_EQ(intersect(cyclic, block), pieces);
}

TEST(Ldd, RandomIntersectionsMatchBruteForce) {
  std::mt19937_64 rng(11);
  auto pick = [&](Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(rng); };
  for (int trial = 0; trial < 4000; ++trial) {
    auto random_ldd = [&] {
      Ldd d;
      d.b = pick(0, 9);
      d.n = pick(0, 12);
      d.s = d.b + pick(0, 12);
      if (d.n == 1 && pick(0, 1)) d.s = pick(0, 30);  // one block: the stride means nothing
      d.o = pick(0, 40);
      return d;
    };
    const Ldd a = random_ldd(), c = random_ldd();
    const LddSet pieces = intersect(a, c);
    SCOPED_TRACE(::testing::Message() << "a = (" << a.o << "," << a.b << "," << a.s << "," << a.n << "), c = (" << c.o
                                      << "," << c.b << "," << c.s << "," << c.n << ")");
    ASSERT_EQ(index_set(pieces), brute_intersection({a}, {c}));
    expect_disjoint(pieces);
    for (const Ldd& p : pieces) {
      EXPECT_FALSE(p.empty());
      if (p.n > 1) {
        EXPECT_GE(p.s, p.b);
      }
    }
  }
}

// Layouts' LDDs, cut at the extent, against each other: the data source i
// sends target j along one dimension (Theorem 1).
TEST(Ldd, ProcessLddsOfLayoutsIntersectExactly) {
  std::mt19937_64 rng(3);
  auto pick = [&](Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    const Index n = pick(1, 500);
    auto random_layout = [&] {
      Distribution d;
      d.grid = {pick(1, 9)};
      d.dims = {pick(0, 4) == 0 ? DimDistribution{DimKind::block, 0} : DimDistribution{DimKind::cyclic, pick(1, 12)}};
      return Layout({n}, d);
    };
    const Layout src = random_layout(), dst = random_layout();
    SCOPED_TRACE(src.str() + " -> " + dst.str());
    Index total = 0;
    for (Index i = 0; i < src.grid(0); ++i) {
      for (Index j = 0; j < dst.grid(0); ++j) {
        const LddSet pieces = intersect(src.ldd(0, i), dst.ldd(0, j));
        std::vector<Index> want;
        for (Index g = 0; g < n; ++g) {
          if (src.owner(0, g) == i && dst.owner(0, g) == j) want.push_back(g);
        }
        ASSERT_EQ(index_set(pieces), want) << "i = " << i << ", j = " << j;
        total += size(pieces);
      }
    }
    EXPECT_EQ(total, n);
  }
}

TEST(Ldd, MultiDimensionalIsTheCartesianProduct) {
  const Layout src({9, 14}, Distribution::parse("cyclic(2),block@3x2"));
  const Layout dst({9, 14}, Distribution::parse("block,cyclic(3)@2x3"));
  for (Rank i = 0; i < src.processes(); ++i) {
    for (Rank j = 0; j < dst.processes(); ++j) {
      const MultiLdd both = intersect(src.ldd(i), dst.ldd(j));
      Index want = 0;
      for (Index g0 = 0; g0 < 9; ++g0) {
        for (Index g1 = 0; g1 < 14; ++g1) {
          const std::vector<Index> g{g0, g1};
          want += src.owner(g) == i && dst.owner(g) == j;
        }
      }
      EXPECT_EQ(both.size(), want) << i << " -> " << j;
      // Lemma 2: empty exactly when one dimension's intersection is.
      bool some_dimension_empty = false;
      for (const LddSet& d : both.dims) some_dimension_empty |= size(d) == 0;
      EXPECT_EQ(both.empty(), some_dimension_empty);
      EXPECT_EQ(both.empty(), want == 0);
    }
  }
  EXPECT_THROW(intersect(src.ldd(0), MultiLdd{{LddSet{}}}), InvalidArgument);
}

}  // namespace
