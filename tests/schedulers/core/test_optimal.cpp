// The optimal schedulers: `optimal` colours every matrix with exactly Δ
// phases, `optimal-bytes` reaches the byte lower bound exactly; both on random
// irregular matrices, the Fig. 7 matrices and the adversarial shapes, and the
// phase cap of optimal-bytes trades a bounded, measured makespan for phases.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/schedulers/optimal.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>
#include <switchyard/splitmix64.hpp>
#include <vector>

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

// Checks both optimal schedulers on m: validity, Δ phases, makespan == L.
void expect_optimal(const CommMatrix& m, const std::string& what) {
  SCOPED_TRACE(what);
  const Schedule s = schedule_optimal(m);
  ASSERT_NO_THROW(validate(s, m));
  EXPECT_EQ(s.phases.size(), m.max_degree()) << "optimal must use exactly Δ phases";
  EXPECT_EQ(s.transfers(), m.messages()) << "whole messages, one transfer each";
  for (const Phase& p : s.phases) EXPECT_FALSE(p.empty());

  const Schedule b = schedule_optimal_bytes(m);
  ASSERT_NO_THROW(validate(b, m));
  EXPECT_EQ(b.makespan_bytes(), m.max_load_bytes()) << "optimal-bytes must reach the byte lower bound";
  EXPECT_GE(b.phases.size(), m.max_degree());
  for (const Phase& p : b.phases) EXPECT_FALSE(p.empty());
}

// Rows of random length 0..max_row, random destinations, sizes 1..max_bytes:
// rows and columns of different counts, empty rows and self-messages.
CommMatrix random_irregular(Rank n, Rank max_row, std::uint64_t max_bytes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  CommMatrix m(n);
  for (Rank i = 0; i < n; ++i) {
    const auto count = static_cast<Rank>(rng() % (max_row + 1));
    for (Rank k = 0; k < count; ++k) m.set(i, static_cast<Rank>(rng() % n), 1 + rng() % max_bytes);
  }
  return m;
}

TEST(Optimal, RandomIrregularMatrices) {
  std::uint64_t seed = 1;
  for (Rank n : {Rank{1}, Rank{2}, Rank{3}, Rank{5}, Rank{16}, Rank{31}, Rank{64}, Rank{100}, Rank{256}}) {
    for (Rank max_row : {Rank{1}, std::max<Rank>(1, n / 8), n / 2 + 1, n}) {
      for (std::uint64_t max_bytes : {std::uint64_t{1}, std::uint64_t{100000}}) {
        const CommMatrix m = random_irregular(n, max_row, max_bytes, ++seed);
        expect_optimal(m, "n=" + std::to_string(n) + " max_row=" + std::to_string(max_row) +
                              " max_bytes=" + std::to_string(max_bytes) + " seed=" + std::to_string(seed));
      }
    }
  }
}

// Skewed degrees: a few heavy rows and columns among light ones, so the
// vertex grouping and padding that make the graph regular do real work.
TEST(Optimal, SkewedDegrees) {
  for (Rank n : {Rank{20}, Rank{256}}) {
    std::mt19937_64 rng(n);
    CommMatrix m(n);
    for (Rank i = 0; i < n; ++i) {
      const Rank count = i % 7 == 0 ? n * 3 / 4 : 1 + static_cast<Rank>(rng() % 3);
      for (Rank k = 0; k < count; ++k) m.set(i, static_cast<Rank>(rng() % n), 1 + rng() % 5000);
    }
    for (Rank k = 0; k < n / 2; ++k) m.set(static_cast<Rank>(rng() % n), 3, 77);
    expect_optimal(m, "skewed n=" + std::to_string(n));
  }
}

TEST(Optimal, Fig7MatricesGetExactlyDPhases) {
  for (const auto& [n, d] : std::vector<std::pair<Rank, Rank>>{
           {32, 1}, {32, 2}, {32, 7}, {32, 31}, {32, 32}, {128, 3}, {128, 64}, {128, 127}, {512, 128}, {512, 511}}) {
    const CommMatrix m = fig7_matrix(n, d, 1, n * 1000 + d);
    const Schedule s = schedule_optimal(m);
    ASSERT_NO_THROW(validate(s, m));
    EXPECT_EQ(s.phases.size(), d) << "n=" << n << " d=" << d;
    for (const Phase& p : s.phases) EXPECT_EQ(p.size(), n) << "a d-regular matrix: every phase is a full permutation";
  }
  for (const auto& [n, d] : std::vector<std::pair<Rank, Rank>>{{32, 8}, {128, 16}, {256, 100}})
    expect_optimal(nonuniform_matrix(n, d, 1000, n + d), "nonuniform n=" + std::to_string(n));
}

TEST(Optimal, AdversarialShapes) {
  for (Rank n : {Rank{1}, Rank{2}, Rank{17}, Rank{256}}) {
    const std::string at = " n=" + std::to_string(n);
    expect_optimal(CommMatrix(n), "empty" + at);

    CommMatrix row(n), column(n), both(n), full(n), diagonal(n), matching(n);
    std::vector<Rank> perm(n);
    for (Rank i = 0; i < n; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(n));
    for (Rank j = 0; j < n; ++j) {
      row.set(0, j, 100 + j);
      column.set(j, n - 1, 1 + j * 3);
      both.set(n / 2, j, 5 + j);
      both.set(j, n / 3, 7 + j);
      diagonal.set(j, j, 4096);
      matching.set(j, perm[j], 1 + j % 13);
      // The full matrix only where optimal-bytes' O(phases * E) stays quick under the sanitizers.
      if (n <= 64)
        for (Rank i = 0; i < n; ++i) full.set(i, j, 1 + (i * 31 + j) % 97);
    }
    expect_optimal(row, "one full row" + at);
    expect_optimal(column, "one full column" + at);
    expect_optimal(both, "a full row and a full column" + at);
    expect_optimal(diagonal, "self-messages only" + at);
    expect_optimal(matching, "a perfect matching" + at);
    expect_optimal(full, "the full matrix" + at);
    EXPECT_EQ(schedule_optimal(matching).phases.size(), n == 0 ? 0u : 1u);
  }
  EXPECT_EQ(schedule_optimal(CommMatrix(0)).phases.size(), 0u);
  EXPECT_EQ(schedule_optimal_bytes(CommMatrix(0)).phases.size(), 0u);
}

TEST(Optimal, DeterministicAndRegistered) {
  const CommMatrix m = nonuniform_matrix(64, 9, 10, 3);
  EXPECT_EQ(schedule_optimal(m).phases, schedule_optimal(m).phases);
  EXPECT_EQ(schedule_optimal_bytes(m).phases, schedule_optimal_bytes(m).phases);
  EXPECT_EQ(make_schedule("optimal", m, 1).phases, schedule_optimal(m).phases);
  EXPECT_EQ(make_schedule("optimal-bytes", m, 1).phases, schedule_optimal_bytes(m).phases);
  EXPECT_EQ(make_schedule("optimal", m, 1).scheduler, "optimal");
  EXPECT_EQ(make_schedule("optimal-bytes", m, ScheduleOptions{1, 12}).phases,
            schedule_optimal_bytes(m, OptimalBytesOptions{12}).phases);
}

// The cap: never more than max(cap, Δ) phases, still valid, never below the
// lower bound, never above the whole-message colouring; no cap and a cap above
// the full decomposition change nothing.
TEST(OptimalBytes, PhaseCapTradesMakespanForPhases) {
  for (const auto& [n, d] : std::vector<std::pair<Rank, Rank>>{{16, 4}, {32, 8}, {100, 10}}) {
    const CommMatrix m = nonuniform_matrix(n, d, 64, n);
    const Schedule full = schedule_optimal_bytes(m);
    ASSERT_GT(full.phases.size(), m.max_degree()) << "the test needs a decomposition the cap can shorten";
    const std::uint64_t lower = m.max_load_bytes();
    EXPECT_EQ(schedule_optimal_bytes(m, OptimalBytesOptions{full.phases.size()}).phases, full.phases);
    EXPECT_EQ(schedule_optimal_bytes(m, OptimalBytesOptions{0}).phases, full.phases);
    const Schedule whole = schedule_optimal_bytes(m, OptimalBytesOptions{1});
    ASSERT_NO_THROW(validate(whole, m));
    EXPECT_EQ(whole.phases.size(), m.max_degree()) << "a cap below Δ gives Δ phases, the fewest possible";
    EXPECT_EQ(whole.transfers(), m.messages()) << "at Δ phases every message goes whole";
    for (std::uint64_t cap :
         {m.max_degree() + 1, m.max_degree() * 2, (m.max_degree() + full.phases.size()) / 2, full.phases.size() - 1}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " cap=" + std::to_string(cap));
      const Schedule s = schedule_optimal_bytes(m, OptimalBytesOptions{cap});
      ASSERT_NO_THROW(validate(s, m));
      EXPECT_LE(s.phases.size(), cap);
      EXPECT_GE(s.makespan_bytes(), lower);
      EXPECT_LE(s.makespan_bytes(), whole.makespan_bytes()) << "a cap never does worse than whole messages";
    }
  }
}

TEST(OptimalBytes, UniformSizesNeedNoSplitting) {
  // Fig. 7 with equal sizes: the slack-free matrix decomposes into exactly d
  // full permutations, each message whole.
  const CommMatrix m = fig7_matrix(64, 9, 333, 5);
  const Schedule s = schedule_optimal_bytes(m);
  ASSERT_NO_THROW(validate(s, m));
  EXPECT_EQ(s.phases.size(), 9u);
  EXPECT_EQ(s.transfers(), m.messages());
  EXPECT_EQ(s.makespan_bytes(), 9u * 333u);
}

// optimal-bytes alone: a valid schedule at the byte lower bound, within the
// open shop's bound of one phase per message plus one per line turning tight.
void expect_at_lower_bound(const CommMatrix& m, const std::string& what) {
  SCOPED_TRACE(what);
  const Schedule b = schedule_optimal_bytes(m);
  ASSERT_NO_THROW(validate(b, m));
  EXPECT_EQ(b.makespan_bytes(), m.max_load_bytes());
  EXPECT_LE(b.phases.size(), m.messages() + 2 * std::uint64_t{m.size()});
  for (const Phase& p : b.phases) EXPECT_FALSE(p.empty());
}

// One receiver, n - 1 senders: the receiver is the only tight line, so each
// phase is one whole message.
TEST(OptimalBytes, StarIsOnePhasePerSender) {
  for (Rank n : {Rank{2}, Rank{3}, Rank{1000}, Rank{5000}}) {
    CommMatrix in(n), out(n);
    SplitMix64 rng(n);
    for (Rank i = 1; i < n; ++i) {
      in.set(i, 0, 1 + rng() % 100000);
      out.set(0, i, 1 + rng() % 100000);
    }
    for (const CommMatrix* m : {&in, &out}) {
      expect_at_lower_bound(*m, "star n=" + std::to_string(n));
      const Schedule s = schedule_optimal_bytes(*m);
      EXPECT_EQ(s.phases.size(), n - 1u);
      EXPECT_EQ(s.transfers(), m->messages()) << "every message whole";
    }
  }
}

// Every entry present, sizes 1..10^6.
CommMatrix dense_continuous(Rank n) {
  CommMatrix m(n);
  SplitMix64 rng(n * 7919u);
  for (Rank i = 0; i < n; ++i)
    for (Rank j = 0; j < n; ++j) m.set(i, j, 1 + rng() % 1000000);
  return m;
}

// Every entry present, sizes continuous and in 32 steps (test set 2): every
// line but a few has slack, the case where a Birkhoff-von Neumann
// decomposition would need about n^2 phases.
// (The continuous 150 x 150 is PhasesNearTheBottleneckMatching's.)
TEST(OptimalBytes, DenseRandomMatrices) {
  for (Rank n : {Rank{7}, Rank{60}, Rank{150}}) {
    if (n != 150) expect_at_lower_bound(dense_continuous(n), "dense continuous n=" + std::to_string(n));
    expect_at_lower_bound(nonuniform_matrix(n, n, 1024, n), "dense test set 2 n=" + std::to_string(n));
  }
}

// Phase counts on fixed matrices against the bottleneck matching that
// optimal-bytes used before the open shop (Birkhoff-von Neumann on the
// matrix padded to regular, each phase the perfect matching whose smallest
// entry is largest): 143 phases and 33 812 pieces on test set 2 with n = 256,
// d = 64, 201 and 19 106 on the dense 100 x 100, 820 and 120 293 on the dense
// 150 x 150 of sizes 1..10^6, where the open shop that kept any matching
// covering the tight lines took 503, 819 and 1501 phases. Every extra
// phase costs the exchange a round and every extra piece a message: at most
// 10 % more of either than the bottleneck matching.
TEST(OptimalBytes, PhasesNearTheBottleneckMatching) {
  struct Case {
    CommMatrix m;
    std::size_t bottleneck_phases;
    std::uint64_t bottleneck_pieces;
    const char* what;
  };
  const Case cases[] = {{nonuniform_matrix(256, 64, 1024, 42), 143, 33812, "test set 2, n = 256, d = 64"},
                        {nonuniform_matrix(100, 100, 1024, 42), 201, 19106, "test set 2, dense 100 x 100"},
                        {dense_continuous(150), 820, 120293, "dense 150 x 150, sizes 1..10^6"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Schedule s = schedule_optimal_bytes(c.m);
    ASSERT_NO_THROW(validate(s, c.m));
    EXPECT_EQ(s.makespan_bytes(), c.m.max_load_bytes());
    EXPECT_LE(s.phases.size(), c.bottleneck_phases + c.bottleneck_phases / 10);
    EXPECT_LE(s.transfers(), c.bottleneck_pieces + c.bottleneck_pieces / 10);
  }
}

// Empty rows and columns among busy ones, and processes that only send or
// only receive.
TEST(OptimalBytes, ZeroRowsAndColumns) {
  for (Rank n : {Rank{4}, Rank{33}, Rank{200}}) {
    CommMatrix m(n);
    SplitMix64 rng(n + 5);
    for (Rank i = 0; i < n; ++i) {
      if (i % 3 == 1) continue;  // rows that send nothing
      for (Rank k = 0; k < n / 2 + 1; ++k) {
        const auto j = static_cast<Rank>(rng() % n);
        if (j % 4 != 2) m.set(i, j, 1 + rng() % 50000);  // columns that receive nothing
      }
    }
    expect_at_lower_bound(m, "zero rows and columns n=" + std::to_string(n));
    for (Rank i = 1; i < n; i += 3) EXPECT_EQ(m.row(i).size(), 0u);
  }
}

// Sizes near 2^63, where a line sum, the time left or a piece's offset would
// wrap in 64 bits if computed carelessly (CommMatrix keeps every sum below
// 2^63).
TEST(OptimalBytes, HugeByteCounts) {
  constexpr std::uint64_t k62 = std::uint64_t{1} << 62;
  {
    CommMatrix one(3);
    one.set(1, 2, kMaxMatrixBytes);
    expect_at_lower_bound(one, "one message of 2^63 - 1 bytes");
  }
  {
    CommMatrix m(5);
    m.set(0, 1, k62 - 1);
    m.set(0, 2, k62 / 2 + 12345);
    m.set(1, 2, k62 / 4 - 7);
    m.set(2, 3, k62 / 8 + 3);
    m.set(3, 0, 5);
    m.set(1, 3, k62 / 16 + 999);
    m.set(4, 4, k62 / 32);
    expect_at_lower_bound(m, "a few messages near 2^62");
  }
  {
    // A tight column of 2^63 - 1 bytes in all, the other lines far below it.
    CommMatrix m(8);
    std::uint64_t left = kMaxMatrixBytes;
    for (Rank i = 0; i < 7; ++i) {
      const std::uint64_t b = i == 6 ? left : left / 3;
      m.set(i, 7, b);
      left -= b;
    }
    EXPECT_EQ(m.max_load_bytes(), kMaxMatrixBytes);
    expect_at_lower_bound(m, "a column of 2^63 - 1 bytes");
  }
  {
    CommMatrix m(40);
    SplitMix64 rng(77);
    for (Rank i = 0; i < 40; ++i)
      for (Rank k = 0; k < 10; ++k) m.set(i, static_cast<Rank>(rng() % 40), 1 + rng() % (k62 / 256));
    expect_at_lower_bound(m, "random sizes up to 2^54");
  }
}

}  // namespace
