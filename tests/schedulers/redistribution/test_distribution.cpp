// Distributions and layouts: the HPF-style syntax and its error messages, and
// ownership and local indices against the definition (owner of g under
// cyclic(b) on P is (g div b) mod P; local index = position in the owner's
// ascending index set), in 1, 2 and 3 dimensions.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/schedulers/redistribution/distribution.hpp>
#include <switchyard/schedulers/redistribution/layout.hpp>
#include <vector>

namespace {

using namespace switchyard;
using namespace switchyard::schedulers::redistribution;

std::string parse_error(const std::string& text) {
  try {
    Distribution::parse(text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

std::string extent_error(const std::string& text) {
  try {
    parse_extent(text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Distribution, ParsesTheIssueExamples) {
  const Distribution a = Distribution::parse("cyclic(6)@4");
  ASSERT_EQ(a.dims.size(), 1u);
  EXPECT_EQ(a.dims[0], (DimDistribution{DimKind::cyclic, 6}));
  EXPECT_EQ(a.grid, std::vector<Index>{4});
  EXPECT_EQ(a.processes(), 4);

  const Distribution b = Distribution::parse("block,cyclic(2)@2x4");
  ASSERT_EQ(b.dims.size(), 2u);
  EXPECT_EQ(b.dims[0].kind, DimKind::block);
  EXPECT_EQ(b.dims[1], (DimDistribution{DimKind::cyclic, 2}));
  EXPECT_EQ(b.grid, (std::vector<Index>{2, 4}));
  EXPECT_EQ(b.processes(), 8);
}

TEST(Distribution, CaseBlanksPlainCyclicAndThreeDimensions) {
  const Distribution d = Distribution::parse("  CYCLIC , Block ,cyclic( 3 ) @ 2 X 1 x 3 ");
  ASSERT_EQ(d.dims.size(), 3u);
  EXPECT_EQ(d.dims[0], (DimDistribution{DimKind::cyclic, 1}));
  EXPECT_EQ(d.dims[1].kind, DimKind::block);
  EXPECT_EQ(d.dims[2], (DimDistribution{DimKind::cyclic, 3}));
  EXPECT_EQ(d.grid, (std::vector<Index>{2, 1, 3}));
  EXPECT_EQ(d.str(), "cyclic(1),block,cyclic(3)@2x1x3");
  EXPECT_EQ(Distribution::parse(d.str()), d);
}

TEST(Distribution, ErrorsSayWhatAndWhere) {
  EXPECT_EQ(parse_error("cyclic(0)@4").rfind("'cyclic(0)@4': block size must be positive at character 8", 0), 0u)
      << parse_error("cyclic(0)@4");
  EXPECT_NE(parse_error("").find("is empty"), std::string::npos);
  EXPECT_NE(parse_error("blok@4").find("'blok' is not a distribution (block, cyclic or cyclic(b)) at character 1"),
            std::string::npos);
  EXPECT_NE(parse_error("cyclic(6)").find("the process grid is missing"), std::string::npos);
  EXPECT_NE(parse_error("cyclic(6@4").find("expected ')' after the block size at character 9"), std::string::npos);
  EXPECT_NE(parse_error("cyclic(x)@4").find("block size must be a positive whole number at character 8"),
            std::string::npos);
  EXPECT_NE(parse_error("block(4)@4").find("block takes no block size (cyclic(b) has one) at character 6"),
            std::string::npos);
  EXPECT_NE(parse_error("cyclic@0").find("a grid dimension must be positive at character 8"), std::string::npos);
  EXPECT_NE(parse_error("cyclic@4x").find("a grid dimension must be a positive whole number at character 10"),
            std::string::npos);
  EXPECT_NE(
      parse_error("block,block@4").find("2 distributed dimension(s) but a 1-dimensional process grid at character 12"),
      std::string::npos);
  EXPECT_NE(parse_error("block@4;").find("unexpected ';' at character 8"), std::string::npos);
  EXPECT_NE(parse_error("cyclic(99999999999999999999)@4").find("block size is too large"), std::string::npos);
  EXPECT_NE(parse_error("block@2048x2048").find("more than 1048576 processes at character 12"), std::string::npos);
  EXPECT_NE(parse_error(",block@4").find("expected block, cyclic or cyclic(b) at character 1"), std::string::npos);
}

TEST(Distribution, Extents) {
  EXPECT_EQ(parse_extent("120000"), std::vector<Index>{120000});
  EXPECT_EQ(parse_extent("1000x1000"), (std::vector<Index>{1000, 1000}));
  EXPECT_EQ(parse_extent(" 7 X 5x3 "), (std::vector<Index>{7, 5, 3}));
  EXPECT_NE(extent_error("0").find("an extent must be positive at character 1"), std::string::npos);
  EXPECT_NE(extent_error("100x0").find("an extent must be positive at character 5"), std::string::npos);
  EXPECT_NE(extent_error("").find("the extent is empty"), std::string::npos);
  EXPECT_NE(extent_error("10,10").find("unexpected ','"), std::string::npos);
  EXPECT_NE(extent_error("-5").find("must be a positive whole number at character 1"), std::string::npos);
  EXPECT_NE(extent_error("100000000x100000000").find("more than"), std::string::npos);
}

TEST(Layout, RejectsMismatchedRanksAndBadValues) {
  EXPECT_THROW(Layout({100, 100}, Distribution::parse("cyclic@4")), InvalidArgument);
  EXPECT_THROW(Layout({100}, Distribution::parse("block,block@2x2")), InvalidArgument);
  EXPECT_THROW(Layout({0}, Distribution::parse("block@2")), InvalidArgument);
  EXPECT_THROW(Layout({10}, Distribution{{{DimKind::cyclic, 0}}, {2}}), InvalidArgument);
  EXPECT_THROW(Layout({10}, Distribution{{{DimKind::cyclic, 1}}, {0}}), InvalidArgument);
  EXPECT_THROW(Layout({10}, Distribution{{{DimKind::cyclic, 1}}, {2, 2}}), InvalidArgument);
  try {
    Layout({100, 100}, Distribution::parse("cyclic@4"));
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("2-dimensional array with a 1-dimensional distribution"), std::string::npos)
        << e.what();
  }
}

TEST(Layout, BlockIsCyclicOfTheCeiling) {
  const Layout l({10}, Distribution::parse("block@4"));
  EXPECT_EQ(l.block(0), 3);
  const std::vector<Index> sizes{3, 3, 3, 1};
  for (Rank p = 0; p < 4; ++p) EXPECT_EQ(l.local_size(p), sizes[p]) << p;
  // More processes than elements: the last ones own nothing.
  const Layout thin({3}, Distribution::parse("block@5"));
  EXPECT_EQ(thin.local_size(2), 1);
  EXPECT_EQ(thin.local_size(3), 0);
  EXPECT_TRUE(thin.ldd(0, 4).empty());
}

// Every element of random layouts: owner, local index and offset by the
// definition, computed here the slow way.
TEST(Layout, OwnershipAndLocalOffsetsMatchTheDefinition) {
  std::mt19937_64 rng(7);
  auto pick = [&](Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(rng); };
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t rank = 1 + trial % 3;
    Distribution d;
    std::vector<Index> extent;
    for (std::size_t k = 0; k < rank; ++k) {
      extent.push_back(rank == 1 ? pick(1, 300) : pick(1, 13));
      d.grid.push_back(pick(1, 5));
      d.dims.push_back(pick(0, 3) == 0 ? DimDistribution{DimKind::block, 0}
                                       : DimDistribution{DimKind::cyclic, pick(1, 7)});
    }
    const Layout l(extent, d);
    SCOPED_TRACE(l.str());
    // Per dimension: owner and local index by the definition.
    for (std::size_t k = 0; k < rank; ++k) {
      const Index b = d.dims[k].kind == DimKind::block ? (extent[k] + d.grid[k] - 1) / d.grid[k] : d.dims[k].block;
      std::map<Index, Index> next_local;  // per coordinate: local indices handed out so far
      for (Index g = 0; g < extent[k]; ++g) {
        const Index owner = (g / b) % d.grid[k];
        ASSERT_EQ(l.owner(k, g), owner) << "g = " << g;
        ASSERT_EQ(l.local_index(k, g), next_local[owner]++) << "g = " << g;
        ASSERT_TRUE(l.ldd(k, owner).size() == 1 ? l.ldd(k, owner)[0].contains(g)
                                                : l.ldd(k, owner)[0].contains(g) || l.ldd(k, owner)[1].contains(g));
      }
      Index total = 0;
      for (Index i = 0; i < d.grid[k]; ++i) {
        EXPECT_EQ(l.local_extent(k, i), next_local[i]);
        total += l.local_extent(k, i);
      }
      EXPECT_EQ(total, extent[k]);
    }
    // Scatter a global array and read every element back through the layout.
    std::vector<double> global(static_cast<std::size_t>(l.elements()));
    for (std::size_t e = 0; e < global.size(); ++e) global[e] = static_cast<double>(e) + 0.5;
    const auto local = l.scatter(global);
    Index total = 0;
    for (Rank p = 0; p < l.processes(); ++p) {
      EXPECT_EQ(static_cast<Index>(local[p].size()), l.local_size(p));
      total += l.local_size(p);
    }
    EXPECT_EQ(total, l.elements());
    std::vector<Index> idx(rank, 0);
    for (std::size_t e = 0; e < global.size(); ++e) {
      Index rest = static_cast<Index>(e);
      for (std::size_t k = rank; k-- > 0;) {
        idx[k] = rest % extent[k];
        rest /= extent[k];
      }
      const Rank p = l.owner(idx);
      ASSERT_EQ(local[p][static_cast<std::size_t>(l.local_offset(p, idx))], global[e]);
    }
    std::vector<std::span<const double>> views(local.begin(), local.end());
    EXPECT_EQ(l.gather(views), global);
  }
}

TEST(Layout, ProcessesAreRowMajorOverTheGrid) {
  const Layout l({8, 8}, Distribution::parse("block,block@2x4"));
  // The paper's numbering for a 2 x 4 grid: (i1, i2) is process 4 i1 + i2 (§4.3).
  for (Index i1 = 0; i1 < 2; ++i1) {
    for (Index i2 = 0; i2 < 4; ++i2) {
      const std::vector<Index> c{i1, i2};
      EXPECT_EQ(l.process_at(c), static_cast<Rank>(4 * i1 + i2));
      EXPECT_EQ(l.coordinates(static_cast<Rank>(4 * i1 + i2)), c);
    }
  }
  EXPECT_THROW(l.coordinates(8), InvalidArgument);
  EXPECT_THROW(l.owner(std::vector<Index>{8, 0}), InvalidArgument);
}

}  // namespace
