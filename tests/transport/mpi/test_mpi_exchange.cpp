// Exchanges and redistributions across nodes: every scheduler's ExchangePlan,
// from the whole matrix and by create(), in every execution and buffer form,
// on a Fig. 7 matrix and on an irregular one, and a redistribution whose source
// and target grids span the nodes, every received byte checked in every run.
// Runs as one node (plain ctest) and as 2 and 3 MPI ranks (ctest -L mpi).

#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>
#include <sys/resource.h>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <tuple>
#include <vector>

#include "exchange_cases.hpp"
#include "exchange_forms.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;
namespace rd = switchyard::schedulers::redistribution;

const std::vector<std::string> kSchedulers{"ac", "drsn", "lp", "cgm", "optimal", "optimal-bytes"};

class MpiExchange : public ::testing::TestWithParam<std::tuple<std::string, bool, sytest::Execution>> {};

// Every scheduler, from the whole matrix on every node alike (the same
// scheduler, the same seed: each node runs its processes' part) or by
// create() in the job, in every execution, through the three buffer forms in
// turn.
TEST_P(MpiExchange, EveryByteOfEveryRunOnFig7AndIrregular) {
  const auto& [scheduler, collective, how] = GetParam();
  const std::vector<std::pair<std::string, CommMatrix>> matrices{{"fig7", fig7_matrix(16, 4, 1500, 3)},
                                                                 {"irregular", sytest::nonuniform_case(13)}};
  for (const auto& [name, m] : matrices) {
    SCOPED_TRACE(name);
    ExchangePlanOptions options;
    options.scheduler = scheduler;
    options.seed = 5;
    options = sytest::with_execution(options, how);
    tbb::task_arena one_thread(1);
    std::optional<ExchangePlan> global;
    if (!collective) global = one_thread.execute([&] { return ExchangePlan(m, options); });
    sytest::runtime().run(
        m.size(),
        [&](Process& p) -> Task<void> {
          ExchangeBuffers b(m, p.rank(), 77);
          sytest::BufferForms forms(b, m.size());
          std::optional<ExchangePlan> mine;
          if (collective) mine = co_await ExchangePlan::create(p, m.row(p.rank()), options);
          const ExchangePlan& plan = collective ? *mine : *global;
          for (int k = 0; k < 6; ++k) {
            b.poison();
            co_await p.barrier();
            co_await forms.run(plan, p, k);
            if (auto bad = b.verify())
              throw PayloadError(scheduler + " on " + name + ", run " + std::to_string(k), *bad);
          }
        },
        sytest::run_options(how.ring_capacity));
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, MpiExchange,
                         ::testing::Combine(::testing::ValuesIn(kSchedulers), ::testing::Bool(),
                                            ::testing::ValuesIn(sytest::kExecutions)),
                         [](const auto& info) {
                           return sytest::identifier(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_create_" : "_global_") + std::get<2>(info.param).name;
                         });

// Every process switches between two sets of buffers (payloads of two
// seeds) every two runs, compiled pulled, pushed and strict: a core that
// copied, packed or unpacked at its members' addresses of an earlier run would
// read the other seed's payload or leave a receive poisoned.
TEST(MpiExchangeMoves, BuffersThatMoveBetweenRuns) {
  const CommMatrix m = fig7_matrix(12, 3, 1500, 4);
  for (const sytest::Execution& how : sytest::kExecutions) {
    if (how.execution != ExchangeExecution::compiled) continue;
    SCOPED_TRACE(how.name);
    ExchangePlanOptions options;
    options.scheduler = "ac";
    options = sytest::with_execution(options, how);
    const ExchangePlan plan = tbb::task_arena(1).execute([&] { return ExchangePlan(m, options); });
    sytest::runtime().run(
        m.size(),
        [&](Process& p) -> Task<void> {
          ExchangeBuffers sets[2] = {ExchangeBuffers(m, p.rank(), 77), ExchangeBuffers(m, p.rank(), 78)};
          sytest::BufferForms forms[2] = {sytest::BufferForms(sets[0], m.size()),
                                          sytest::BufferForms(sets[1], m.size())};
          for (int k = 0; k < 8; ++k) {
            const int set = k / 2 % 2;
            sets[set].poison();
            co_await p.barrier();
            co_await forms[set].run(plan, p, k);
            if (auto bad = sets[set].verify()) throw PayloadError(how.name + ", run " + std::to_string(k), *bad);
          }
        },
        sytest::run_options(how.ring_capacity));
  }
}

TEST(MpiRedistribution, GridsThatSpanNodes) {
  const rd::Layout src({2999}, rd::Distribution::parse("cyclic(6)@4")),
      dst({2999}, rd::Distribution::parse("cyclic(2)@6"));
  std::vector<double> global(2999);
  for (std::size_t e = 0; e < global.size(); ++e) global[e] = static_cast<double>(e) + 0.5;
  const auto in = src.scatter(global);
  const auto want = dst.scatter(global);
  for (rd::ScheduleKind kind : {rd::ScheduleKind::naive, rd::ScheduleKind::optimal}) {
    SCOPED_TRACE(std::string(rd::name(kind)));
    const rd::RedistributionPlan redistribution(src, dst, kind);
    sytest::runtime().run(
        6,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          std::span<const double> mine;
          if (me < in.size()) mine = in[me];
          std::vector<double> out(want[me].size());
          for (int k = 0; k < 3; ++k) {
            std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
            co_await p.barrier();
            co_await redistribution.run(p, mine, out);
            SY_CHECK(out == want[me], "run " << k << ": target " << me << "'s block is wrong");
          }
        },
        sytest::run_options());
  }
}

// A process throws in the middle of compiled runs that cross the nodes (in a
// hook, after its receives of run 2): its node's run() rethrows it, every
// other node's a RemoteFailure naming it, within 5 s; the next job's plan
// runs on the same runtime.
TEST(MpiExchangeFailure, AThrowInACompiledRunEndsTheJobOnEveryNode) {
  Runtime& rt = sytest::runtime();
  const CommMatrix m = fig7_matrix(8, 3, 4000, 9);
  const ExchangePlan plan = tbb::task_arena(1).execute([&] { return ExchangePlan(m, "ac"); });
  const Rank thrower = 7;  // the last node's
  class ThrowAfterRun2 final : public ExchangeHooks {
   public:
    ThrowAfterRun2(ExchangeBuffers& b, int k) : b_(b), k_(k) {}
    std::span<const std::byte> send_buffer(std::size_t i) override { return b_.send_buffer(i); }
    std::span<std::byte> recv_buffer(std::size_t i) override { return b_.recv_buffer(i); }
    void after_receive(std::size_t) override {
      if (k_ == 2) throw std::runtime_error("boom after run 2");
    }

   private:
    ExchangeBuffers& b_;
    int k_;
  };
  const sytest::JobFailure e = sytest::run_failing(
      rt, m.size(),
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 4);
        for (int k = 0; k < 5; ++k) {
          ThrowAfterRun2 hooks(b, p.rank() == thrower ? k : -1);
          co_await plan.run(p, hooks);
        }
      },
      sytest::run_options());
  EXPECT_LT(e.took, std::chrono::seconds(5));
  const bool failing_node = rt.node() == rt.nodes() - 1;
  EXPECT_EQ(e.kind, failing_node ? sytest::JobFailure::kOriginal : sytest::JobFailure::kRemote) << e.error;
  EXPECT_NE(e.error.find("boom after run 2"), std::string::npos) << e.error;
  rt.run(
      m.size(),
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 5);
        sytest::BufferForms forms(b, m.size());
        co_await forms.run(plan, p, 0);
        if (auto bad = b.verify()) throw PayloadError("the next job", *bad);
      },
      sytest::run_options());
}

// A compiled exchange's key must name one exchange on
// every node. In job 1 the members of a communicator of ranks {0, 2, 3} make
// three plans by create(): with 2 nodes of 2 processes, node 0 hosts one
// member of it and node 1 two, so each node has made a different number of
// plans. Both nodes then make W, a 4096-byte ring, from the whole pattern. Job
// 2 runs W, then makes C, an 8-byte ring, by create() on the world and runs
// it. A key agreed from rank 0's per-process count named W on node 1, which
// ran W's program on C's buffers (SIGSEGV; under ASan an overflow in C's
// 8-byte buffers). Every byte of both is checked, in every run.
TEST(MpiExchangeKeys, APlanByCreateNeverRunsAnotherPlansProgram) {
  Runtime& rt = sytest::runtime();
  constexpr Rank n = 4;
  auto ring = [](std::uint64_t bytes) {
    CommMatrix m(n);
    for (Rank r = 0; r < n; ++r) m.set(r, (r + 1) % n, bytes);
    return m;
  };
  const CommMatrix three = [] {
    CommMatrix m(3);
    for (Rank r = 0; r < 3; ++r) m.set(r, (r + 1) % 3, 64);
    return m;
  }();
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const Communicator some = co_await p.world().split(p.rank() == 1 ? Communicator::kUndefined : 0, p.rank());
        if (p.rank() == 1) co_return;
        for (int k = 0; k < 3; ++k) {
          const ExchangePlan plan = co_await ExchangePlan::create(some, three.row(some.rank()));
          ExchangeBuffers b(three, some.rank(), 20 + k);
          sytest::BufferForms forms(b, three.size());
          co_await forms.run(plan, some, 0);
          if (auto bad = b.verify()) throw PayloadError("job 1, plan " + std::to_string(k), *bad);
        }
      },
      sytest::run_options());
  const CommMatrix w = ring(4096), c = ring(8);
  // C's options (the default ones): the runtime cannot tell the two apart by them.
  const ExchangePlan whole = tbb::task_arena(1).execute([&] { return ExchangePlan(w, ExchangePlanOptions{}); });
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        ExchangeBuffers wb(w, p.rank(), 31);
        sytest::BufferForms wf(wb, n);
        co_await wf.run(whole, p, 0);
        if (auto bad = wb.verify()) throw PayloadError("job 2, W", *bad);
        const ExchangePlan created = co_await ExchangePlan::create(p, c.row(p.rank()));
        ExchangeBuffers cb(c, p.rank(), 32);
        sytest::BufferForms cf(cb, n);
        for (int k = 0; k < 3; ++k) {
          cb.poison();
          co_await p.barrier();
          co_await cf.run(created, p, k);
          if (auto bad = cb.verify()) throw PayloadError("job 2, C, run " + std::to_string(k), *bad);
        }
      },
      sytest::run_options());
}

// Members that pass create() different schedulers (rank
// 2 "ac", the others "optimal"), or different executions (rank 3 on
// messages), used to wait in different collectives until the stall timeout.
// Now every member throws at once, naming rank 0's options and the first
// member's that differ; the runtime then runs the next job.
TEST(MpiExchangeCreate, MembersWithDifferentOptionsAreToldAtOnce) {
  Runtime& rt = sytest::runtime();
  constexpr Rank n = 4;
  CommMatrix ring(n);
  for (Rank r = 0; r < n; ++r) ring.set(r, (r + 1) % n, 64);
  struct Case {
    Rank odd;
    ExchangePlanOptions options;
    std::string said;
  };
  const Case cases[]{
      {2, ExchangePlanOptions{.scheduler = "ac"}, "rank 2 scheduler 'ac', compiled"},
      {3, ExchangePlanOptions{.execution = ExchangeExecution::messages}, "rank 3 scheduler 'optimal', on messages"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.said);
    const sytest::JobFailure e = sytest::run_failing(
        rt, n,
        [&](Process& p) -> Task<void> {
          const ExchangePlanOptions options = p.rank() == c.odd ? c.options : ExchangePlanOptions{};
          const ExchangePlan plan = co_await ExchangePlan::create(p, ring.row(p.rank()), options);
          ADD_FAILURE() << "create() returned on rank " << p.rank();
        },
        sytest::run_options());
    EXPECT_LT(e.took, std::chrono::seconds(5)) << e.error;
    EXPECT_NE(e.error.find("the members pass different options: rank 0 scheduler 'optimal', compiled"),
              std::string::npos)
        << e.error;
    EXPECT_NE(e.error.find(c.said), std::string::npos) << e.error;
  }
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const ExchangePlan plan = co_await ExchangePlan::create(p, ring.row(p.rank()));
        ExchangeBuffers b(ring, p.rank(), 3);
        sytest::BufferForms forms(b, n);
        co_await forms.run(plan, p, 0);
        if (auto bad = b.verify()) throw PayloadError("the next job", *bad);
      },
      sytest::run_options());
}

// This process's minor page faults so far (every thread of the node).
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The staging buffers between nodes outlive their job (node_staging_pool.hpp):
// a plan's first run in a later job on the same runtime finds their pages
// mapped, where the first job's run faults them in (8 MiB each way per node
// pair: 2048 pages). Measured over this node's processes from the barrier
// before the run to the barrier after it, with buffers made in the first job.
TEST(MpiExchangeStaging, ALaterJobFindsItsStagingMapped) {
  Runtime& rt = sytest::runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << "needs 2 nodes or more (ctest -L mpi)";
  constexpr std::uint64_t kBytes = 8 << 20;
  constexpr long kStagingPages = kBytes / 4096;
  const Rank n = 2 * rt.nodes();  // ranks in blocks over the nodes: 2 a node
  CommMatrix m(n);
  for (Rank r = 0; r < n; ++r) m.set(r, (r + 2) % n, kBytes);  // each to a process of the next node
  const ExchangePlan plan = tbb::task_arena(1).execute([&] { return ExchangePlan(m, "ac"); });
  std::vector<std::unique_ptr<ExchangeBuffers>> buffers(n);
  auto faults_of_first_run = [&] {
    long faults = 0;
    rt.run(
        n,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          if (!buffers[me]) buffers[me] = std::make_unique<ExchangeBuffers>(m, me, 11);
          ExchangeBuffers& b = *buffers[me];
          sytest::BufferForms forms(b, n);
          const bool counts = me % 2 == 0;  // the node's first process
          b.poison();
          co_await p.barrier();
          const long before = minor_faults();
          co_await forms.run(plan, p, 0);
          co_await p.barrier();
          if (counts) faults = minor_faults() - before;
          if (auto bad = b.verify()) throw PayloadError("staging reused", *bad);
        },
        sytest::run_options());
    return faults;
  };
  const long first = faults_of_first_run();
  const long second = faults_of_first_run();
  EXPECT_GE(first, kStagingPages) << "the first job's run should map its staging";
  EXPECT_LT(second, kStagingPages / 8) << "the second job's run faulted pages in: " << second << " (first: " << first
                                       << ")";
}

}  // namespace
