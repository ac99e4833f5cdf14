// COM and the scheduling tables of Guo-Nakata-Yamashita §4: COM against a
// reference computed element by element, the paper's worked examples
// (Figs. 6-8 and §1.2, §4.1), Theorem 3 (every column of CS is a partial
// permutation) over a sweep of redistributions, §4.4's receiving table, the
// baselines of Figs. 1 and 4, and the optimal scheduler where the paper's
// method stops.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/schedulers/optimal.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <switchyard/schedulers/redistribution/redistribution_tables.hpp>
#include <vector>

namespace {

using namespace switchyard;
using namespace switchyard::schedulers::redistribution;

Layout layout(const std::string& extent, const std::string& distribution) {
  return Layout(parse_extent(extent), Distribution::parse(distribution));
}

// COM the slow way: the owners of every element before and after.
CommTable reference_com(const Layout& src, const Layout& dst) {
  CommTable com(src.processes(), dst.processes());
  const auto& extent = src.extent();
  std::vector<Index> g(extent.size(), 0);
  for (Index e = 0; e < src.elements(); ++e) {
    Index rest = e;
    for (std::size_t d = extent.size(); d-- > 0;) {
      g[d] = rest % extent[d];
      rest /= extent[d];
    }
    const Rank i = src.owner(g), j = dst.owner(g);
    com.set(i, j, com.elements(i, j) + 1);
  }
  return com;
}

std::vector<std::int32_t> ints(std::initializer_list<int> v) { return {v.begin(), v.end()}; }

void expect_permutation_columns(const SchedulingTable& cs, Rank targets) {
  EXPECT_TRUE(cs.contention_free());
  for (std::uint32_t k = 0; k < cs.steps(); ++k) {
    for (std::int32_t j : cs.column(k)) {
      EXPECT_TRUE(j == SchedulingTable::kIdle || (j >= 0 && static_cast<Rank>(j) < targets));
    }
  }
}

ContentionFreeTable paper_table(const Layout& src, const Layout& dst) {
  const CommTable com = communication_table(src, dst);
  TableAttempt a = contention_free_table(src, dst, com);
  if (!a.table) throw std::runtime_error("no table: " + a.reason);
  validate_table(a.table->cs, com);
  expect_permutation_columns(a.table->cs, dst.processes());
  return *a.table;
}

// Fig. 6 / 7(a): P = P' = 6, K = 4, from cyclic(4) to cyclic(1).
TEST(PaperExamples, SixProcessesRelativeGroupSubGroupsAndStartElements) {
  const Layout src = layout("48", "cyclic(4)@6"), dst = layout("48", "cyclic(1)@6");
  const CommTable com = communication_table(src, dst);
  EXPECT_EQ(com.max_sends(), 4u);
  EXPECT_EQ(com.max_receives(), 4u);
  const Algorithm1Result r = algorithm1(com, 4);
  EXPECT_EQ(r.relative_group, ints({0, 4, 2, 0, 4, 2}));
  ASSERT_EQ(r.sub_groups.size(), 3u);
  EXPECT_EQ(r.sub_groups[0], (std::vector<Rank>{0, 3}));
  EXPECT_EQ(r.sub_groups[1], (std::vector<Rank>{1, 4}));
  EXPECT_EQ(r.sub_groups[2], (std::vector<Rank>{2, 5}));
  // (P0, P3) start at (0, 1), (P1, P4) at (4, 5), (P2, P5) at (2, 3).
  EXPECT_EQ(r.start, ints({0, 4, 2, 1, 5, 3}));
  EXPECT_EQ(r.cs.row(0), ints({0, 1, 2, 3}));
  EXPECT_EQ(r.cs.row(3), ints({1, 2, 3, 0}));
  EXPECT_EQ(r.cs.row(1), ints({4, 5, 0, 1}));
  EXPECT_EQ(r.cs.row(4), ints({5, 0, 1, 4}));
  for (std::uint32_t k = 0; k < 4; ++k) {  // Theorem 3: every column a permutation of 0..5
    auto col = r.cs.column(k);
    std::sort(col.begin(), col.end());
    EXPECT_EQ(col, ints({0, 1, 2, 3, 4, 5})) << "column " << k;
  }
  const ContentionFreeTable t = paper_table(src, dst);
  EXPECT_EQ(t.cs, r.cs);
  EXPECT_NE(t.method.find("Algorithm 1, b = 4 b'"), std::string::npos) << t.method;
}

// Fig. 6 / 7(b): P = P' = 5, K = 3: every sub-group has one member.
TEST(PaperExamples, FiveProcessesStartElements) {
  const Layout src = layout("45", "cyclic(3)@5"), dst = layout("45", "cyclic@5");
  const CommTable com = communication_table(src, dst);
  EXPECT_EQ(com.max_sends(), 3u);
  const Algorithm1Result r = algorithm1(com, 3);
  EXPECT_EQ(r.relative_group, ints({0, 3, 1, 4, 2}));
  EXPECT_EQ(r.sub_groups.size(), 5u);
  EXPECT_EQ(r.start, ints({0, 3, 1, 4, 2}));
  EXPECT_EQ(r.cs.row(1), ints({3, 4, 0}));
  EXPECT_EQ(paper_table(src, dst).cs, r.cs);
}

// §1.2: cyclic(6) to cyclic(2) on 4 processes, each sending to three; Fig. 1's
// naive order and Fig. 4's offset order against Algorithm 1's table.
TEST(PaperExamples, Cyclic6ToCyclic2OnFourProcesses) {
  const Layout src = layout("120000", "cyclic(6)@4"), dst = layout("120000", "cyclic(2)@4");
  const CommTable com = communication_table(src, dst);
  for (Rank i = 0; i < 4; ++i) {
    EXPECT_EQ(com.sends(i), 3u) << i;
    for (Rank j = 0; j < 4; ++j) {
      // Source i's blocks split into targets 3i, 3i + 1, 3i + 2 (mod 4): 10000 elements each.
      const bool sends = (j + 4 - (3 * i) % 4) % 4 < 3;
      EXPECT_EQ(com.elements(i, j), sends ? 10000 : 0) << i << " -> " << j;
    }
  }
  const ContentionFreeTable t = paper_table(src, dst);
  ASSERT_EQ(t.cs.steps(), 3u);
  EXPECT_EQ(t.cs.row(0), ints({0, 1, 2}));
  EXPECT_EQ(t.cs.row(1), ints({3, 0, 1}));
  EXPECT_EQ(t.cs.row(2), ints({2, 3, 0}));
  EXPECT_EQ(t.cs.row(3), ints({1, 2, 3}));
  EXPECT_EQ(algorithm1(com, 3).relative_group, ints({0, 3, 2, 1}));

  // Fig. 1: step k goes to target k; target 0 gets three messages in step 0.
  const SchedulingTable naive = naive_table(com);
  EXPECT_EQ(naive.steps(), 4u);
  EXPECT_EQ(naive.column(0), ints({0, 0, 0, -1}));
  EXPECT_FALSE(naive.contention_free());
  EXPECT_THROW(receiving_table(naive, 4), InvalidArgument);
  validate_table(naive, com);
  // Fig. 4: source i starts at target i; with P = P' no column repeats a target.
  const SchedulingTable offset = offset_table(com);
  EXPECT_EQ(offset.steps(), 4u);
  EXPECT_EQ(offset.row(1), ints({1, -1, 3, 0}));  // source 1 never sends to 2
  EXPECT_TRUE(offset.contention_free());
  validate_table(offset, com);
}

// Fig. 8: (BLOCK, BLOCK) on 2 x 4 to (BLOCK, BLOCK) on 4 x 2, Algorithm 2 with
// case 2.2 (P_2 = 4 > P'_2 = 2). Processes are numbered 4 i1 + i2 and 2 j1 + j2.
TEST(PaperExamples, BlockBlockTwoByFourToFourByTwo) {
  const Layout src = layout("8x8", "block,block@2x4"), dst = layout("8x8", "block,block@4x2");
  const CommTable com1 = dimension_table(src, dst, 0), com2 = dimension_table(src, dst, 1);
  // Fig. 8(a), (b): COM_1 is 2 x 4, COM_2 is 4 x 2.
  for (Rank i = 0; i < 2; ++i) {
    for (Rank j = 0; j < 4; ++j) EXPECT_EQ(com1.communicates(i, j), j / 2 == i) << i << "," << j;
  }
  for (Rank i = 0; i < 4; ++i) {
    for (Rank j = 0; j < 2; ++j) EXPECT_EQ(com2.communicates(i, j), i / 2 == j) << i << "," << j;
  }
  // Fig. 8(c): COM[(i1, i2), (j1, j2)] = COM_1[i1, j1] ∧ COM_2[i2, j2].
  const CommTable com = communication_table(src, dst);
  for (Rank i = 0; i < 8; ++i) {
    for (Rank j = 0; j < 8; ++j) {
      EXPECT_EQ(com.communicates(i, j), com1.communicates(i / 4, j / 2) && com2.communicates(i % 4, j % 2));
      if (com.communicates(i, j)) {
        EXPECT_EQ(com.elements(i, j), 4);  // 2 x 2 elements
      }
    }
  }
  EXPECT_EQ(com.max_sends(), 2u);
  EXPECT_EQ(com.max_receives(), 2u);
  // Fig. 8(d): two steps; the start elements are the pairs (J1, J2).
  const ContentionFreeTable t = paper_table(src, dst);
  ASSERT_EQ(t.cs.steps(), 2u);
  EXPECT_EQ(t.cs.column(0), ints({0, 2, 1, 3, 4, 6, 5, 7}));
  EXPECT_EQ(t.cs.column(1), ints({2, 0, 3, 1, 6, 4, 7, 5}));
  EXPECT_NE(t.method.find("case 2.2"), std::string::npos) << t.method;
  const SchedulingTable recv = receiving_table(t.cs, 8);
  for (Rank j = 0; j < 8; ++j) {
    for (std::uint32_t k = 0; k < 2; ++k) EXPECT_EQ(t.cs.at(static_cast<Rank>(recv.at(j, k)), k), static_cast<int>(j));
  }
}

// §4.1: P = 12, P' = 8, b = 4, b' = 3 has K' = 4 > K = 2: the paper's method
// stops there; the optimal scheduler does it in 4 steps.
TEST(PaperExamples, TwelveToEightNeedsTheOptimalScheduler) {
  const Layout src = layout("480", "cyclic(4)@12"), dst = layout("480", "cyclic(3)@8");
  const CommTable com = communication_table(src, dst);
  EXPECT_EQ(com.max_sends(), 2u);
  EXPECT_EQ(com.max_receives(), 4u);
  const TableAttempt a = contention_free_table(src, dst, com);
  EXPECT_FALSE(a.table);
  EXPECT_NE(a.reason.find("not multiples"), std::string::npos) << a.reason;
  const auto s = schedulers::schedule_optimal(comm_matrix(com));
  EXPECT_EQ(s.phases.size(), 4u);
  schedulers::validate(s, comm_matrix(com));
  expect_permutation_columns(table_of(s, 12), 8);
}

// §4.4: the sending table of b' = β b is the receiving table of b = β b'.
TEST(Tables, TransposedCaseIsTheReceivingTable) {
  const SchedulingTable forward = paper_table(layout("48", "cyclic(4)@6"), layout("48", "cyclic@6")).cs;
  const ContentionFreeTable back = paper_table(layout("48", "cyclic@6"), layout("48", "cyclic(4)@6"));
  EXPECT_EQ(back.cs, receiving_table(forward, 6));
  EXPECT_NE(back.method.find("transpose"), std::string::npos);
}

TEST(Tables, ComMatchesTheReferenceInOneTwoAndThreeDimensions) {
  std::mt19937_64 rng(5);
  auto pick = [&](Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(rng); };
  for (int trial = 0; trial < 90; ++trial) {
    const std::size_t rank = 1 + trial % 3;
    std::vector<Index> extent;
    Distribution a, b;
    for (std::size_t d = 0; d < rank; ++d) {
      extent.push_back(rank == 1 ? pick(1, 400) : rank == 2 ? pick(1, 30) : pick(1, 9));
      for (Distribution* x : {&a, &b}) {
        x->grid.push_back(pick(1, rank == 3 ? 3 : 6));
        x->dims.push_back(pick(0, 3) == 0 ? DimDistribution{DimKind::block, 0}
                                          : DimDistribution{DimKind::cyclic, pick(1, 8)});
      }
    }
    const Layout src(extent, a), dst(extent, b);
    SCOPED_TRACE(src.str() + " -> " + dst.str());
    const CommTable com = communication_table(src, dst);
    ASSERT_EQ(com, reference_com(src, dst));
    validate_table(naive_table(com), com);
    validate_table(offset_table(com), com);
    const TableAttempt t = contention_free_table(src, dst, com);
    if (t.table) {
      validate_table(t.table->cs, com);
      expect_permutation_columns(t.table->cs, dst.processes());
    } else {
      EXPECT_FALSE(t.reason.empty());
    }
    const auto s = schedulers::schedule_optimal(comm_matrix(com));
    EXPECT_EQ(s.phases.size(), std::max(com.max_sends(), com.max_receives()));
    expect_permutation_columns(table_of(s, src.processes()), dst.processes());
  }
}

// Theorem 3 over a sweep of 1-D redistributions on whole periods: wherever
// Algorithm 1 applies (b = β b' with K' <= K, or b' = β b with K <= K'), its
// table exists, is contention-free, and has max(K, K') steps.
TEST(Tables, Theorem3Sweep) {
  int tables = 0;
  for (Index p = 1; p <= 9; ++p) {
    for (Index q = 1; q <= 9; ++q) {
      for (Index small = 1; small <= 2; ++small) {
        for (Index beta = 1; beta <= 5; ++beta) {
          for (const bool flip : {false, true}) {
            const Index b = flip ? small : small * beta, b2 = flip ? small * beta : small;
            const Index period = std::lcm(b * p, b2 * q);
            const Layout src({period}, Distribution{{{DimKind::cyclic, b}}, {p}});
            const Layout dst({period}, Distribution{{{DimKind::cyclic, b2}}, {q}});
            const CommTable com = communication_table(src, dst);
            const std::uint32_t k = com.max_sends(), k2 = com.max_receives();
            const bool applies = (b % b2 == 0 && k2 <= k) || (b2 % b == 0 && k <= k2) || p == 1 || q == 1;
            const TableAttempt t = contention_free_table(src, dst, com);
            ASSERT_EQ(t.table.has_value(), applies) << src.str() << " -> " << dst.str() << ": " << t.reason;
            if (!t.table) continue;
            ++tables;
            EXPECT_EQ(t.table->cs.steps(), std::max(k, k2)) << src.str() << " -> " << dst.str();
            expect_permutation_columns(t.table->cs, static_cast<Rank>(q));
          }
        }
      }
    }
  }
  EXPECT_GT(tables, 1000);
}

// A finite array that is not a whole number of periods: the periodic table's
// extra entries become idle and the table stays valid.
TEST(Tables, UnevenExtentsKeepValidTables) {
  for (const Index n : {1, 5, 23, 97, 1001}) {
    const ContentionFreeTable t =
        paper_table(layout(std::to_string(n), "cyclic(6)@4"), layout(std::to_string(n), "cyclic(2)@4"));
    EXPECT_LE(t.cs.steps(), 3u);
  }
  const ContentionFreeTable one = paper_table(layout("17", "block@1"), layout("17", "cyclic(5)@1"));
  EXPECT_EQ(one.cs.steps(), 1u);
  EXPECT_EQ(one.cs.at(0, 0), 0);
}

TEST(Tables, ScheduleConversions) {
  const CommTable com = communication_table(layout("120", "cyclic(6)@4"), layout("120", "cyclic(2)@3"));
  const SchedulingTable cs = naive_table(com);
  const auto s = schedule_of(cs, com, "naive");
  EXPECT_EQ(s.processes, 4u);
  EXPECT_EQ(table_of(s, 4), cs);
  std::uint64_t bytes = 0;
  for (const auto& phase : s.phases) {
    for (const auto& t : phase) bytes += t.bytes;
  }
  EXPECT_EQ(bytes, 120 * sizeof(double));
  const auto lists = receiving_lists(s, 3);
  for (Rank j = 0; j < 3; ++j) {
    for (std::uint32_t k = 0; k < s.phases.size(); ++k) {
      EXPECT_EQ(lists[j][k].size(), k == j ? com.receives(j) : 0u);
    }
  }
  EXPECT_EQ(comm_matrix(com).total_bytes(), bytes);
}

// Tables beyond the machine are refused before any of them is made: with
// 10^6 sources cyclic -> 4 blocks, every schedule's sending table would have
// 10^6 rows of 250,000 steps (1 TB; std::bad_alloc after 5 s before).
TEST(TablesBeyondTheMachine, AreRefusedUpFront) {
  const Layout src({1'000'000}, Distribution::parse("cyclic@1000000"));
  const Layout dst({1'000'000}, Distribution::parse("block@4"));
  const CommTable com = communication_table(src, dst);
  EXPECT_EQ(com.max_receives(), 250'000u);
  try {
    check_tables_fit(com);
    ADD_FAILURE() << "a sending table of 10^6 x 250000 steps was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(", the machine has "), std::string::npos) << e.what();
  }
  EXPECT_THROW(RedistributionPlan(src, dst, ScheduleKind::naive), InvalidArgument);
  // The paper's tables of cyclic@80000 -> block@4 (80000 x 80000 steps) do not apply, and say why.
  const Layout wide({80'000}, Distribution::parse("cyclic@80000")), four({80'000}, Distribution::parse("block@4"));
  const TableAttempt attempt = contention_free_table(wide, four, communication_table(wide, four));
  EXPECT_FALSE(attempt.table);
  EXPECT_NE(attempt.reason.find(", the machine has "), std::string::npos) << attempt.reason;
  // Sizes that fit are unaffected.
  EXPECT_NO_THROW(check_tables_fit(communication_table(Layout({1000}, Distribution::parse("cyclic@100")),
                                                       Layout({1000}, Distribution::parse("block@10")))));
}

}  // namespace
