// The static schedulers (LP, GM, CGM, RS_N, RS_NH): every schedule passes the
// validator on uniform, non-uniform and irregular matrices of many sizes; LP's
// phase structure; the phase lower bound; determinism per seed; serial and
// oneTBB compaction agree; CGM reproduces Ranka-Wang-Fox Table 4 (small n);
// RS_NH narrows phases on non-uniform matrices.

#include <switchyard/errors.hpp>
#include <switchyard/schedulers/ccom.hpp>
#include <switchyard/schedulers/phase_statistics.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

enum class Kind { Uniform, Nonuniform, EmptyRows, SelfMessages, DenseRow, Empty };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Uniform:
      return "uniform";
    case Kind::Nonuniform:
      return "nonuniform";
    case Kind::EmptyRows:
      return "empty_rows";
    case Kind::SelfMessages:
      return "self_messages";
    case Kind::DenseRow:
      return "dense_row";
    case Kind::Empty:
      return "empty";
  }
  return "?";
}

Rank density(Rank n) { return std::max<Rank>(1, std::min<Rank>(n, n / 4 + 1)); }

CommMatrix make_matrix(Kind kind, Rank n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto size = [&] { return std::uniform_int_distribution<std::uint64_t>(1, 4096)(rng); };
  CommMatrix m(n);
  switch (kind) {
    case Kind::Uniform:
      return fig7_matrix(n, density(n), 1024, seed);
    case Kind::Nonuniform:
      return nonuniform_matrix(n, density(n), 64, seed);
    case Kind::EmptyRows:
      // Every third row sends nothing; the others send to random peers.
      for (Rank i = 0; i < n; ++i) {
        if (i % 3 == 0) continue;
        for (Rank k = 0; k < density(n); ++k) m.set(i, static_cast<Rank>(rng() % n), size());
      }
      return m;
    case Kind::SelfMessages:
      for (Rank i = 0; i < n; ++i) {
        m.set(i, i, size());
        m.set(i, (i + 1) % n, size());
      }
      return m;
    case Kind::DenseRow:
      // Process 0 sends to everyone, itself included; the rest form a ring.
      for (Rank j = 0; j < n; ++j) m.set(0, j, size());
      for (Rank i = 1; i < n; ++i) m.set(i, (i + 1) % n, size());
      return m;
    case Kind::Empty:
      return m;
  }
  return m;
}

// LP needs a phase beyond its n - 1 pairings only for a process with a
// self-message that is busy in every pairing phase: with XOR pairs (n a power of
// two) that is a process exchanging with every other process in one direction or
// the other; with shifts, one whose phase (j - i) mod n is taken by a send or a
// receive for every k.
bool lp_needs_extra_phase(const CommMatrix& m) {
  const Rank n = m.size();
  const bool xor_pairs = (n & (n - 1)) == 0;
  for (Rank i = 0; i < n; ++i) {
    if (m.at(i, i) == 0) continue;
    bool idle_somewhere = false;
    for (Rank k = 1; k < n && !idle_somewhere; ++k) {
      const Rank to = xor_pairs ? (i ^ k) : (i + k) % n;
      const Rank from = xor_pairs ? (i ^ k) : (i + n - k) % n;
      idle_somewhere = m.at(i, to) == 0 && m.at(from, i) == 0;
    }
    if (!idle_somewhere) return true;
  }
  return false;
}

bool has_self_messages(const CommMatrix& m) {
  for (Rank i = 0; i < m.size(); ++i) {
    if (m.at(i, i) != 0) return true;
  }
  return false;
}

using Case = std::tuple<std::string, Rank, Kind>;

class EveryScheduler : public ::testing::TestWithParam<Case> {};

TEST_P(EveryScheduler, ProducesAValidSchedule) {
  const auto& [name, n, kind] = GetParam();
  for (std::uint64_t seed : {1u, 2u}) {
    const CommMatrix m = make_matrix(kind, n, seed * 7919 + n);
    const Schedule s = make_schedule(name, m, seed);
    EXPECT_EQ(s.processes, n);
    EXPECT_EQ(s.scheduler, name);
    ASSERT_NO_THROW(validate(s, m)) << name << " n=" << n << " " << kind_name(kind) << " seed " << seed;
    EXPECT_GE(s.phases.size(), m.max_degree()) << "no schedule beats the most messages at one process";
    if (name == "lp") {
      EXPECT_EQ(s.phases.size(), (n > 1 ? n - 1 : 0) + (lp_needs_extra_phase(m) ? 1u : 0u));
      continue;
    }
    // The masking schedulers stop when everything is sent: no empty phase.
    for (const Phase& p : s.phases) EXPECT_FALSE(p.empty());
    if (name != "rsnh" && name != "optimal-bytes") {
      EXPECT_EQ(s.transfers(), m.messages()) << "whole messages, one transfer each";
    }
    if (kind == Kind::Empty) {
      EXPECT_TRUE(s.phases.empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, EveryScheduler,
                         ::testing::Combine(::testing::ValuesIn(static_scheduler_names()),
                                            ::testing::Values(Rank{1}, Rank{2}, Rank{3}, Rank{7}, Rank{32}, Rank{100},
                                                              Rank{128}),
                                            ::testing::Values(Kind::Uniform, Kind::Nonuniform, Kind::EmptyRows,
                                                              Kind::SelfMessages, Kind::DenseRow, Kind::Empty)),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name + "_n" + std::to_string(std::get<1>(info.param)) + "_" +
                                  kind_name(std::get<2>(info.param));
                         });

// A random matrix without self-messages.
CommMatrix off_diagonal(Rank n, Rank per_row, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  CommMatrix m(n);
  for (Rank i = 0; i < n; ++i) {
    for (Rank k = 0; k < per_row; ++k) {
      const auto j = static_cast<Rank>(rng() % n);
      if (j != i) m.set(i, j, 1 + rng() % 100);
    }
  }
  return m;
}

TEST(Lp, PowersOfTwoUseExactlyNMinus1XorPhases) {
  for (Rank n : {2u, 4u, 32u, 128u}) {
    for (Rank per_row : {1u, 5u, n}) {
      const CommMatrix m = off_diagonal(n, per_row, n * 31 + per_row);
      ASSERT_FALSE(has_self_messages(m));
      const Schedule s = schedule_lp(m);
      ASSERT_EQ(s.phases.size(), n - 1) << "n=" << n;
      for (std::size_t k = 1; k < n; ++k) {
        for (const Transfer& t : s.phases[k - 1])
          EXPECT_EQ(t.src ^ t.dst, k) << "phase " << k << " pairs i with i XOR k";
      }
      validate(s, m);
    }
  }
}

TEST(Lp, EmptyPhasesAreKept) {
  CommMatrix m(8);
  m.set(0, 1, 5);  // only phase 1 carries anything
  const Schedule s = schedule_lp(m);
  ASSERT_EQ(s.phases.size(), 7u);
  EXPECT_EQ(s.phases[0].size(), 1u);
  for (std::size_t k = 1; k < 7; ++k) EXPECT_TRUE(s.phases[k].empty());
  EXPECT_EQ(schedule_lp(CommMatrix(16)).phases.size(), 15u);
  EXPECT_EQ(schedule_lp(CommMatrix(1)).phases.size(), 0u);
}

TEST(Lp, SelfMessagesGoWhereTheirProcessIsIdle) {
  CommMatrix m = off_diagonal(16, 3, 5);
  m.set(4, 4, 10);
  m.set(9, 9, 20);
  const Schedule s = schedule_lp(m);
  ASSERT_EQ(s.phases.size(), 15u) << "a sparse matrix leaves every process idle in some pairing phase";
  int self_seen = 0;
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    for (const Transfer& t : s.phases[p]) {
      if (t.src == t.dst) {
        ++self_seen;
        for (const Transfer& u : s.phases[p]) {
          if (&u != &t) {
            EXPECT_TRUE(u.src != t.src && u.dst != t.src) << "process " << t.src << " is not idle in phase " << p;
          }
        }
      } else {
        EXPECT_EQ(t.src ^ t.dst, p + 1);
      }
    }
  }
  EXPECT_EQ(self_seen, 2);
  validate(s, m);
  // A process that exchanges with everyone has no idle pairing phase: its self-message needs one more.
  CommMatrix busy(8);
  for (Rank j = 0; j < 8; ++j) busy.set(0, j, 1);
  const Schedule b = schedule_lp(busy);
  ASSERT_EQ(b.phases.size(), 8u);
  ASSERT_EQ(b.phases.back().size(), 1u);
  EXPECT_EQ(b.phases.back()[0].src, 0u);
  EXPECT_EQ(b.phases.back()[0].dst, 0u);
  validate(b, busy);
  CommMatrix one(1);
  one.set(0, 0, 3);
  EXPECT_EQ(schedule_lp(one).phases.size(), 1u);
}

TEST(Lp, OtherSizesUseNMinus1ShiftPhases) {
  for (Rank n : {3u, 7u, 100u}) {
    const CommMatrix m = off_diagonal(n, n, n);
    const Schedule s = schedule_lp(m);
    ASSERT_EQ(s.phases.size(), n - 1) << "n=" << n;
    for (std::size_t k = 1; k < n; ++k) {
      for (const Transfer& t : s.phases[k - 1]) EXPECT_EQ((t.dst + n - t.src) % n, k);
    }
    validate(s, m);
  }
}

TEST(Cgm, OnePermutationNeedsOnePhase) {
  for (Rank n : {1u, 7u, 128u}) {
    const CommMatrix m = fig7_matrix(n, 1, 10, n);
    EXPECT_EQ(schedule_cgm(m, 3).phases.size(), 1u) << "n=" << n;
  }
}

TEST(Cgm, PhasesAtLeastMaxDegree) {
  for (Rank d : {2u, 8u, 31u}) {
    const CommMatrix m = fig7_matrix(32, d, 1, d);
    const Schedule s = schedule_cgm(m, d);
    EXPECT_GE(s.phases.size(), m.max_degree());
    EXPECT_EQ(m.max_degree(), d);
  }
}

bool same_phases(const Schedule& a, const Schedule& b) { return a.phases == b.phases; }

TEST(Determinism, SameSeedSameScheduleOtherSeedOtherSchedule) {
  const CommMatrix m = nonuniform_matrix(64, 12, 10, 77);
  for (const std::string name : {"gm", "cgm", "rsn", "rsnh"}) {
    const Schedule a = make_schedule(name, m, 5);
    const Schedule b = make_schedule(name, m, 5);
    EXPECT_TRUE(same_phases(a, b)) << name << ": the same seed must give the same schedule";
    EXPECT_FALSE(same_phases(a, make_schedule(name, m, 6))) << name << ": another seed should give another schedule";
  }
  EXPECT_TRUE(same_phases(schedule_lp(m), schedule_lp(m)));
}

TEST(Cgm, SerialAndParallelCompactionGiveIdenticalSchedules) {
  for (const auto& [n, d] : std::vector<std::pair<Rank, Rank>>{{1, 1}, {7, 3}, {100, 20}, {512, 64}}) {
    const CommMatrix m = nonuniform_matrix(n, d, 8, n + d);
    for (std::uint64_t seed : {0u, 11u}) {
      const Schedule serial = schedule_cgm(m, seed, false);
      const Schedule parallel = schedule_cgm(m, seed, true);
      EXPECT_TRUE(same_phases(serial, parallel)) << "n=" << n << " d=" << d << " seed " << seed;
      validate(parallel, m);
    }
  }
}

TEST(Compaction, RowsArePermutationsOfTheMatrixRows) {
  const CommMatrix m = make_matrix(Kind::EmptyRows, 50, 3);
  const CompactMatrix c = compact(m, 9, false);
  ASSERT_EQ(c.processes, 50u);
  std::uint32_t longest = 0;
  for (Rank i = 0; i < m.size(); ++i) {
    const auto row = m.row(i);
    longest = std::max<std::uint32_t>(longest, static_cast<std::uint32_t>(row.size()));
    ASSERT_EQ(c.length[i], row.size());
    std::vector<Rank> got(c.row(i).begin(), c.row(i).end()), want;
    for (std::uint32_t k = 0; k < c.length[i]; ++k) {
      const std::size_t at = std::size_t{i} * c.width + k;
      EXPECT_EQ(row[c.slot[at]].peer, c.dst[at]) << "slot names the entry's message";
    }
    for (const auto& e : row) want.push_back(e.peer);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want);
  }
  EXPECT_EQ(c.width, longest);
  // Random_Swap really shuffles: a long row is not left in column order.
  const CommMatrix dense = fig7_matrix(64, 64, 1, 1);
  const CompactMatrix d = compact(dense, 1, false);
  EXPECT_FALSE(std::is_sorted(d.row(0).begin(), d.row(0).end()));
}

TEST(Compaction, SerialParallelSparseAndDenseAgree) {
  for (const auto& [n, d] : std::vector<std::pair<Rank, Rank>>{{1, 1}, {33, 5}, {300, 64}}) {
    const CommMatrix m = fig7_matrix(n, d, 1, n);
    const CompactMatrix serial = compact(m, 42, false);
    EXPECT_EQ(compact(m, 42, true), serial);
    const std::vector<std::uint8_t> com = dense_pattern(m);
    EXPECT_EQ(compact_dense(com, n, 42, false), serial);
    EXPECT_EQ(compact_dense(com, n, 42, true), serial);
    if (d > 1) {
      EXPECT_NE(compact(m, 43, false), serial);
    }
  }
  EXPECT_THROW(compact_dense(std::vector<std::uint8_t>(5), 2, 0, false), InvalidArgument);
}

TEST(Registry, NamesAndUnknownName) {
  const std::vector<std::string> want{"lp", "gm", "cgm", "rsn", "rsnh", "optimal", "optimal-bytes"};
  EXPECT_EQ(static_scheduler_names(), want);
  EXPECT_THROW(make_schedule("cgm2", CommMatrix(4), 0), InvalidArgument);
}

TEST(PhaseStatistics, CountsAndValidates) {
  const PhaseStatistics one = phase_statistics("cgm", 64, 1, 5, 1);
  EXPECT_EQ(one.avg, 1.0);
  EXPECT_EQ(one.min, 1u);
  EXPECT_EQ(one.max, 1u);
  const PhaseStatistics st = phase_statistics("rsn", 32, 8, 20, 1);
  EXPECT_LE(static_cast<double>(st.min), st.avg);
  EXPECT_LE(st.avg, static_cast<double>(st.max));
  EXPECT_GE(st.min, 8u);
  EXPECT_GT(st.schedule_ms_avg, 0.0);
  EXPECT_EQ(phase_statistics("lp", 32, 8, 3, 1).avg, 31.0) << "self-messages fit in phases where their process is idle";
  EXPECT_THROW(phase_statistics("nope", 32, 8, 3, 1), InvalidArgument);
  EXPECT_THROW(phase_statistics("cgm", 32, 8, 0, 1), InvalidArgument);
  EXPECT_THROW(phase_statistics("cgm", 32, 33, 3, 1), InvalidArgument);
}

// Ranka-Wang-Fox Table 4, n = 32 (the full table: bench/table4_reproduction).
TEST(Cgm, ReproducesTable4ForSmallN) {
  struct Row {
    Rank d;
    double paper;
  };
  for (const Row r : {Row{4, 5.6}, Row{8, 10.2}, Row{16, 18.5}}) {
    const PhaseStatistics st = phase_statistics("cgm", 32, r.d, 100, 2024);
    const double dev = (st.avg - r.paper) / r.paper;
    std::printf("CGM n=32 d=%u: %.2f phases (paper %.1f, %+.1f%%)\n", r.d, st.avg, r.paper, 100 * dev);
    EXPECT_LE(std::abs(dev), 0.08) << "d=" << r.d << ": " << st.avg << " vs the paper's " << r.paper;
  }
}

TEST(Rsnh, UniformSizesAreNeverSplit) {
  const CommMatrix m = fig7_matrix(64, 16, 4096, 3);
  const Schedule s = schedule_rsnh(m, 3);
  validate(s, m);
  EXPECT_EQ(s.transfers(), m.messages());
  EXPECT_EQ(s.makespan_bytes(), s.phases.size() * 4096);
}

TEST(Rsnh, NarrowsPhasesOnNonuniformSizes) {
  for (const auto& [n, d] : std::vector<std::pair<Rank, Rank>>{{32, 4}, {32, 16}, {32, 31}, {128, 16}}) {
    double rsn = 0, rsnh = 0, rsn_phases = 0, rsnh_phases = 0, bound = 0;
    bool split = false;
    const int seeds = 10;
    for (int seed = 0; seed < seeds; ++seed) {
      const CommMatrix m = nonuniform_matrix(n, d, 1024, 100 + seed);
      const Schedule a = schedule_rsn(m, seed);
      const Schedule b = schedule_rsnh(m, seed);
      validate(b, m);
      rsn += static_cast<double>(a.makespan_bytes());
      rsnh += static_cast<double>(b.makespan_bytes());
      rsn_phases += static_cast<double>(a.phases.size());
      rsnh_phases += static_cast<double>(b.phases.size());
      bound += static_cast<double>(m.max_load_bytes());
      for (const Phase& p : b.phases) {
        for (const Transfer& t : p) split = split || t.offset != 0;
      }
    }
    std::printf(
        "n=%u d=%u non-uniform, mean over %d seeds: makespan_bytes RS_N %.0f (%.1f phases), RS_NH %.0f (%.1f "
        "phases), RS_NH/RS_N %.3f, lower bound (max load) %.0f\n",
        n, d, seeds, rsn / seeds, rsn_phases / seeds, rsnh / seeds, rsnh_phases / seeds, rsnh / rsn, bound / seeds);
    EXPECT_LE(rsnh, rsn) << "n=" << n << " d=" << d;
    EXPECT_TRUE(split) << "the cutoff should split some message";
  }
}

}  // namespace
