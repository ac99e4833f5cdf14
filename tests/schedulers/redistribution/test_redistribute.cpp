// Redistributions executed on the runtime, every element of every target
// checked against a sequential reference that knows nothing of LDDs: the owner
// of global index g under cyclic(b) on P is (g div b) mod P, per dimension,
// and its local index is its position among the owner's indices. Random
// (extent, b, P, b', P') in 1, 2 and 3 dimensions with every schedule kind,
// extents divisible by nothing, P != P', one process; a plan executed many
// times; a plan run inside the caller's own job, and by two halves of a job
// at once; and the argument checks.

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <vector>

#include "exchange_cases.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers::redistribution;

// The reference: each process's local array under `l`, built from the
// definition, for a global array whose element at row-major offset e is value(e).
struct Reference {
  std::vector<std::vector<double>> local;
};

double value(Index e, int seed) { return static_cast<double>(e) * 1.25 + seed; }

Reference reference(const Layout& l, int seed) {
  const std::size_t rank = l.rank();
  std::vector<Index> b(rank), p(rank), n(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    n[d] = l.extent()[d];
    p[d] = l.distribution().grid[d];
    b[d] = l.distribution().dims[d].kind == DimKind::block ? (n[d] + p[d] - 1) / p[d] : l.distribution().dims[d].block;
  }
  // Local extents: how many indices each grid coordinate owns, per dimension.
  std::vector<std::vector<Index>> count(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    count[d].assign(static_cast<std::size_t>(p[d]), 0);
    for (Index g = 0; g < n[d]; ++g) ++count[d][static_cast<std::size_t>((g / b[d]) % p[d])];
  }
  Reference r;
  r.local.resize(l.processes());
  std::vector<Index> g(rank, 0);
  for (Index e = 0; e < l.elements(); ++e) {
    Index rest = e;
    for (std::size_t d = rank; d-- > 0;) {
      g[d] = rest % n[d];
      rest /= n[d];
    }
    Index proc = 0, offset = 0;
    std::vector<Index> coord(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      coord[d] = (g[d] / b[d]) % p[d];
      proc = proc * p[d] + coord[d];
    }
    for (std::size_t d = 0; d < rank; ++d) {
      const Index local = (g[d] / (b[d] * p[d])) * b[d] + g[d] % b[d];
      offset = offset * count[d][static_cast<std::size_t>(coord[d])] + local;
    }
    auto& v = r.local[static_cast<std::size_t>(proc)];
    if (v.empty()) {
      Index size = 1;
      for (std::size_t d = 0; d < rank; ++d) size *= count[d][static_cast<std::size_t>(coord[d])];
      v.assign(static_cast<std::size_t>(size), std::numeric_limits<double>::quiet_NaN());
    }
    v[static_cast<std::size_t>(offset)] = value(e, seed);
  }
  return r;
}

template <class T>
std::vector<std::span<T>> spans(std::vector<std::vector<double>>& v) {
  return {v.begin(), v.end()};
}

// Runs `plan` on the reference's source arrays and checks every target element.
void run_and_check(const RedistributionPlan& plan, int seed, RunOptions options = sytest::run_options()) {
  Reference in = reference(plan.source(), seed);
  const Reference want = reference(plan.target(), seed);
  std::vector<std::vector<double>> out(plan.target().processes());
  for (Rank j = 0; j < out.size(); ++j) {
    out[j].assign(static_cast<std::size_t>(plan.target().local_size(j)), std::numeric_limits<double>::quiet_NaN());
  }
  const auto in_views = spans<const double>(in.local);
  const auto out_views = spans<double>(out);
  plan.execute(sytest::runtime(), in_views, out_views, std::move(options));
  for (Rank j = 0; j < out.size(); ++j) {
    ASSERT_EQ(out[j].size(), want.local[j].size()) << "target " << j;
    for (std::size_t e = 0; e < out[j].size(); ++e) {
      ASSERT_EQ(out[j][e], want.local[j][e]) << name(plan.kind()) << ": target " << j << ", local element " << e;
    }
  }
}

// Every kind on one redistribution, compiled (straight from local_in into
// local_out) and through messages (packed and unpacked); the table kind may
// not apply.
void check_every_kind(const Layout& src, const Layout& dst, int seed) {
  for (ScheduleKind kind : all_schedule_kinds())
    for (schedulers::ExchangeExecution execution :
         {schedulers::ExchangeExecution::compiled, schedulers::ExchangeExecution::messages}) {
      const bool copy = execution == schedulers::ExchangeExecution::compiled;
      SCOPED_TRACE(std::string(name(kind)) + (copy ? ", copy: " : ", messages: ") + src.str() + " -> " + dst.str());
      std::optional<RedistributionPlan> plan;
      try {
        plan.emplace(src, dst, kind, execution);
      } catch (const TableNotApplicable&) {
        ASSERT_EQ(kind, ScheduleKind::table);
        continue;
      }
      EXPECT_EQ(plan->execution(), execution);
      if (kind == ScheduleKind::table || kind == ScheduleKind::optimal || kind == ScheduleKind::optimal_bytes) {
        EXPECT_TRUE(plan->contention_free());
      }
      if (kind == ScheduleKind::optimal) {
        EXPECT_EQ(plan->steps(), std::max(plan->com().max_sends(), plan->com().max_receives()));
      }
      run_and_check(*plan, seed);
    }
}

Layout random_layout(std::mt19937_64& rng, const std::vector<Index>& extent, Index max_grid) {
  auto pick = [&](Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(rng); };
  Distribution d;
  for (std::size_t k = 0; k < extent.size(); ++k) {
    d.grid.push_back(pick(1, max_grid));
    d.dims.push_back(pick(0, 4) == 0 ? DimDistribution{DimKind::block, 0}
                                     : DimDistribution{DimKind::cyclic, pick(1, 9)});
  }
  return Layout(extent, d);
}

TEST(Redistribute, PaperExampleEveryKind) {
  const Layout src({120000}, Distribution::parse("cyclic(6)@4")), dst({120000}, Distribution::parse("cyclic(2)@4"));
  check_every_kind(src, dst, 1);
  const RedistributionPlan naive(src, dst, ScheduleKind::naive), table(src, dst, ScheduleKind::table);
  EXPECT_FALSE(naive.contention_free());
  EXPECT_EQ(table.steps(), 3u);
}

// A process's own pieces that repeat alike are copied together, period by
// period: two runs of 2 doubles (Fig. 9 at P=2), three of 5 (cyclic(30) to
// cyclic(5)) and fifteen of 2 (cyclic(60) to cyclic(2)), on extents that end
// inside a period. The fixed-size loops and the general one, every element.
TEST(Redistribute, OwnPiecesAlikeGoTogether) {
  check_every_kind(Layout({1213}, Distribution::parse("cyclic(6)@2")),
                   Layout({1213}, Distribution::parse("cyclic(2)@2")), 11);
  check_every_kind(Layout({853}, Distribution::parse("cyclic(30)@2")),
                   Layout({853}, Distribution::parse("cyclic(5)@2")), 12);
  check_every_kind(Layout({853}, Distribution::parse("cyclic(60)@2")),
                   Layout({853}, Distribution::parse("cyclic(2)@2")), 13);
}

TEST(Redistribute, RandomOneDimensional) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 30; ++trial) {
    const std::vector<Index> extent{std::uniform_int_distribution<Index>(1, 3000)(rng)};
    check_every_kind(random_layout(rng, extent, 9), random_layout(rng, extent, 9), trial);
  }
}

// Redistributions where Algorithm 1 applies, on extents that are not whole periods.
TEST(Redistribute, RandomMultiplesWithUnevenExtents) {
  std::mt19937_64 rng(22);
  auto pick = [&](Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(rng); };
  int tables = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const Index small = pick(1, 4), beta = pick(1, 6), n = pick(1, 5000);
    const bool flip = pick(0, 1);
    const Layout src({n}, Distribution{{{DimKind::cyclic, flip ? small : small * beta}}, {pick(1, 12)}});
    const Layout dst({n}, Distribution{{{DimKind::cyclic, flip ? small * beta : small}}, {pick(1, 12)}});
    check_every_kind(src, dst, trial);
    tables += contention_free_table(src, dst, communication_table(src, dst)).table.has_value();
  }
  EXPECT_GT(tables, 10);  // the table kind was exercised, not only skipped
}

TEST(Redistribute, RandomTwoDimensional) {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 16; ++trial) {
    const std::vector<Index> extent{std::uniform_int_distribution<Index>(1, 60)(rng),
                                    std::uniform_int_distribution<Index>(1, 60)(rng)};
    check_every_kind(random_layout(rng, extent, 4), random_layout(rng, extent, 4), trial);
  }
}

TEST(Redistribute, RandomThreeDimensional) {
  std::mt19937_64 rng(24);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<Index> extent;
    for (int d = 0; d < 3; ++d) extent.push_back(std::uniform_int_distribution<Index>(1, 17)(rng));
    check_every_kind(random_layout(rng, extent, 3), random_layout(rng, extent, 3), trial);
  }
}

TEST(Redistribute, BlockBlockShapeChanging) {
  const Layout src({1000, 1000}, Distribution::parse("block,block@2x4"));
  const Layout dst({1000, 1000}, Distribution::parse("block,block@4x2"));
  check_every_kind(src, dst, 3);
  EXPECT_EQ(RedistributionPlan(src, dst, ScheduleKind::table).steps(), 2u);
}

TEST(Redistribute, OneProcessAndDifferentProcessCounts) {
  check_every_kind(Layout({37}, Distribution::parse("block@1")), Layout({37}, Distribution::parse("cyclic(4)@1")), 4);
  check_every_kind(Layout({37}, Distribution::parse("cyclic(3)@1")), Layout({37}, Distribution::parse("cyclic@7")), 5);
  check_every_kind(Layout({37}, Distribution::parse("cyclic@7")), Layout({37}, Distribution::parse("block@1")), 6);
  // More processes than elements: some own nothing before or after.
  check_every_kind(Layout({5}, Distribution::parse("block@8")), Layout({5}, Distribution::parse("cyclic(2)@3")), 7);
  check_every_kind(Layout({1, 1}, Distribution::parse("block,cyclic@2x2")),
                   Layout({1, 1}, Distribution::parse("cyclic,block@1x3")), 8);
}

// One-packet rings: every message goes through a full ring, in pieces.
TEST(Redistribute, TinyRings) {
  const RedistributionPlan plan(Layout({3000}, Distribution::parse("cyclic(6)@8")),
                                Layout({3000}, Distribution::parse("cyclic(1)@5")), ScheduleKind::naive);
  run_and_check(plan, 9, sytest::run_options(1));
}

// Built once, executed many times, with new data each time.
TEST(Redistribute, PlanExecutedManyTimes) {
  const RedistributionPlan plan(Layout({50, 40}, Distribution::parse("cyclic(3),block@3x2")),
                                Layout({50, 40}, Distribution::parse("block,cyclic(2)@2x3")), ScheduleKind::optimal);
  for (int rep = 0; rep < 4; ++rep) run_and_check(plan, 100 + rep);
}

// The plan inside the caller's own SPMD job, with more processes than it needs.
TEST(Redistribute, RunInsideTheCallersJob) {
  const Layout src({999}, Distribution::parse("cyclic(6)@4")), dst({999}, Distribution::parse("cyclic(2)@6"));
  const RedistributionPlan plan(src, dst, ScheduleKind::table);
  Reference in = reference(src, 11);
  const Reference want = reference(dst, 11);
  std::vector<std::vector<double>> out(6);
  for (Rank j = 0; j < 6; ++j) out[j].assign(static_cast<std::size_t>(dst.local_size(j)), -1.0);
  sytest::runtime().run(
      8,
      [&](Process& p) -> Task<void> {
        // Named spans, not conditional expressions in the co_await's full
        // expression: GCC 12 evaluated the branch not taken there.
        const Rank r = p.rank();
        std::span<const double> mine;
        std::span<double> after;
        if (r < 4) mine = in.local[r];
        if (r < 6) after = out[r];
        co_await p.barrier();
        co_await plan.run(p, mine, after);
        co_await p.barrier();
      },
      sytest::run_options());
  for (Rank j = 0; j < 6; ++j) EXPECT_EQ(out[j], want.local[j]) << j;
}

// The compiled runs copy straight from each source's local_in into its
// targets' local_out: on 1 to 8 processes, in 1 and 2 dimensions
// (Guo-Nakata-Yamashita's Fig. 9 and 2-D layouts among them), inside a job of
// more processes than the grids, run after run with new data each time.
TEST(Redistribute, DirectCopiesOnOneToEightProcessesInALargerJob) {
  std::vector<std::pair<Layout, Layout>> layouts;
  for (Index p = 1; p <= 8; ++p) {
    const std::string at = "@" + std::to_string(p);
    layouts.emplace_back(Layout({1200}, Distribution::parse("cyclic(6)" + at)),
                         Layout({1200}, Distribution::parse("cyclic(2)" + at)));
    layouts.emplace_back(Layout({997}, Distribution::parse("block" + at)),
                         Layout({997}, Distribution::parse("cyclic(3)@" + std::to_string(9 - p))));
  }
  layouts.emplace_back(Layout({100, 100}, Distribution::parse("block,cyclic(2)@2x2")),
                       Layout({100, 100}, Distribution::parse("cyclic(3),block@4x1")));
  layouts.emplace_back(Layout({37, 41}, Distribution::parse("cyclic(2),cyclic(3)@2x3")),
                       Layout({37, 41}, Distribution::parse("block,cyclic@1x8")));
  layouts.emplace_back(Layout({30, 20}, Distribution::parse("cyclic,block@1x1")),
                       Layout({30, 20}, Distribution::parse("block,block@2x2")));
  for (const auto& [src, dst] : layouts) {
    SCOPED_TRACE(src.str() + " -> " + dst.str());
    const RedistributionPlan plan(src, dst, ScheduleKind::optimal);
    const Rank job = plan.processes() + 3;
    std::vector<std::vector<double>> out(job);
    sytest::runtime().run(
        job,
        [&](Process& p) -> Task<void> {
          const Rank r = p.rank();
          for (int run = 0; run < 3; ++run) {
            Reference in = reference(src, 40 + run);
            const Reference want = reference(dst, 40 + run);
            std::span<const double> mine;
            if (r < src.processes()) mine = in.local[r];
            if (r < dst.processes()) out[r].assign(want.local[r].size(), std::numeric_limits<double>::quiet_NaN());
            co_await p.barrier();
            co_await plan.run(p, mine, out[r]);
            co_await p.barrier();  // `in` stays until every target has copied out of it
            SY_CHECK(r >= dst.processes() || out[r] == want.local[r], "run " << run << ", target " << r);
          }
        },
        sytest::run_options());
  }
}

// One plan run by both halves of a job at the same time: two processes of
// each rank, one per half, want the plan's staging memory of that rank at once.
TEST(Redistribute, OnePlanOnTwoHalvesAtOnce) {
  const Layout src({1000}, Distribution::parse("cyclic(3)@4")), dst({1000}, Distribution::parse("cyclic(5)@4"));
  for (ScheduleKind kind : {ScheduleKind::naive, ScheduleKind::optimal_bytes}) {
    SCOPED_TRACE(std::string(name(kind)));
    const RedistributionPlan plan(src, dst, kind);
    Reference in[2] = {reference(src, 30), reference(src, 31)};
    const Reference want[2] = {reference(dst, 30), reference(dst, 31)};
    std::vector<std::vector<double>> out(8);
    sytest::runtime().run(
        8,
        [&](Process& p) -> Task<void> {
          const Rank h = p.rank() % 2;
          const Communicator half = co_await p.world().split(h, p.rank());
          const Rank r = half.rank();
          for (int run = 0; run < 4; ++run) {
            out[p.rank()].assign(want[h].local[r].size(), std::numeric_limits<double>::quiet_NaN());
            co_await half.barrier();
            co_await plan.run(half, in[h].local[r], out[p.rank()]);
            SY_CHECK(out[p.rank()] == want[h].local[r], "run " << run << ", half " << h << ", target " << r);
          }
        },
        sytest::run_options());
  }
}

// Many runs in one job with staging memory made once; buffers of another plan are refused.
TEST(Redistribute, RunsWithBuffersKeptAcrossRuns) {
  const Layout src({40, 30}, Distribution::parse("cyclic(2),cyclic(3)@2x3")),
      dst({40, 30}, Distribution::parse("block,cyclic@3x2"));
  const RedistributionPlan plan(src, dst, ScheduleKind::optimal), other(src, dst, ScheduleKind::naive);
  Reference in = reference(src, 13);
  const Reference want = reference(dst, 13);
  std::vector<std::vector<double>> out(6);
  sytest::runtime().run(
      6,
      [&](Process& p) -> Task<void> {
        const Rank r = p.rank();
        RedistributionBuffers buffers(plan, r);
        for (int run = 0; run < 3; ++run) {
          out[r].assign(want.local[r].size(), std::numeric_limits<double>::quiet_NaN());
          co_await p.barrier();
          co_await plan.run(p, in.local[r], out[r], buffers);
          SY_CHECK(out[r] == want.local[r], "run " << run << ", target " << r);
        }
      },
      sytest::run_options());
  EXPECT_THROW(sytest::runtime().run(
                   6,
                   [&](Process& p) -> Task<void> {
                     RedistributionBuffers wrong(other, p.rank());
                     co_await plan.run(p, in.local[p.rank()], out[p.rank()], wrong);
                   },
                   sytest::run_options()),
               InvalidArgument);
  EXPECT_THROW(RedistributionBuffers(plan, 6), InvalidArgument);
}

TEST(Redistribute, ConvenienceCall) {
  const Layout src({1234}, Distribution::parse("cyclic(5)@3")), dst({1234}, Distribution::parse("block@4"));
  Reference in = reference(src, 12);
  const Reference want = reference(dst, 12);
  std::vector<std::vector<double>> out(4);
  for (Rank j = 0; j < 4; ++j) out[j].assign(static_cast<std::size_t>(dst.local_size(j)), 0.0);
  redistribute(sytest::runtime(), src, dst, spans<const double>(in.local), spans<double>(out), ScheduleKind::offset);
  for (Rank j = 0; j < 4; ++j) EXPECT_EQ(out[j], want.local[j]) << j;
}

TEST(Redistribute, ArgumentChecks) {
  const Layout src({100}, Distribution::parse("cyclic(4)@12")), dst({100}, Distribution::parse("cyclic(3)@8"));
  try {
    RedistributionPlan(src, dst, ScheduleKind::table);
    ADD_FAILURE() << "no TableNotApplicable";
  } catch (const TableNotApplicable& e) {
    EXPECT_NE(std::string(e.what()).find("not multiples"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RedistributionPlan(src, Layout({99}, Distribution::parse("block@8")), ScheduleKind::naive),
               InvalidArgument);
  const RedistributionPlan plan(src, dst, ScheduleKind::optimal);
  EXPECT_EQ(plan.steps(), 4u);  // K' = 4 > K = 2 (§4.1's example)
  std::vector<std::vector<double>> in(12), out(8);
  for (Rank i = 0; i < 12; ++i) in[i].resize(static_cast<std::size_t>(src.local_size(i)));
  for (Rank j = 0; j < 8; ++j) out[j].resize(static_cast<std::size_t>(dst.local_size(j)));
  auto short_in = in;
  short_in[3].pop_back();
  EXPECT_THROW(plan.execute(sytest::runtime(), spans<const double>(short_in), spans<double>(out)), InvalidArgument);
  auto few_out = out;
  few_out.pop_back();
  EXPECT_THROW(plan.execute(sytest::runtime(), spans<const double>(in), spans<double>(few_out)), InvalidArgument);
  // Inside a job too small for it.
  EXPECT_THROW(sytest::runtime().run(
                   4, [&](Process& p) -> Task<void> { co_await plan.run(p, {}, {}); }, sytest::run_options()),
               InvalidArgument);
  EXPECT_EQ(parse_schedule_kind("optimal-bytes"), ScheduleKind::optimal_bytes);
  EXPECT_FALSE(parse_schedule_kind("fastest"));
  EXPECT_EQ(name(ScheduleKind::offset), "offset");
}

}  // namespace
