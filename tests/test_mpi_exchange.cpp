// Exchanges and redistributions across nodes: every scheduler's ExchangePlan
// on a Fig. 7 matrix and on an irregular one, and a redistribution whose source
// and target grids span the nodes, every received byte checked in every run.
// Runs as one node (plain ctest) and as 2 and 3 MPI ranks (ctest -L mpi).

#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>

#include <limits>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <vector>

#include "exchange_cases.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;
namespace rd = switchyard::redistribution;

const std::vector<std::string> kSchedulers{"ac", "drsn", "lp", "cgm", "optimal", "optimal-bytes"};

class MpiExchange : public ::testing::TestWithParam<std::string> {};

// The plan is made from the whole matrix on every node alike (the same
// scheduler, the same seed): each node runs its processes' part of it.
TEST_P(MpiExchange, EveryByteOfEveryRunOnFig7AndIrregular) {
  const std::string scheduler = GetParam();
  const std::vector<std::pair<std::string, CommMatrix>> matrices{
      {"fig7", fig7_matrix(16, 4, 1500, 3)}, {"irregular", sytest::nonuniform_case(13)}};
  for (const auto& [name, m] : matrices) {
    SCOPED_TRACE(name);
    ExchangePlanOptions options;
    options.scheduler = scheduler;
    options.seed = 5;
    tbb::task_arena one_thread(1);
    const ExchangePlan plan = one_thread.execute([&] { return ExchangePlan(m, options); });
    sytest::runtime().run(
        m.size(),
        [&](Process& p) -> Task<void> {
          ExchangeBuffers b(m, p.rank(), 77);
          std::vector<std::span<const std::byte>> sends;
          std::vector<std::span<std::byte>> recvs;
          for (std::size_t i = 0; i < b.row().size(); ++i) sends.push_back(b.send_buffer(i));
          for (std::size_t i = 0; i < b.column().size(); ++i) recvs.push_back(b.recv_buffer(i));
          for (int k = 0; k < 3; ++k) {
            b.poison();
            co_await p.barrier();
            co_await plan.run(p, sends, recvs);
            if (auto bad = b.verify()) throw PayloadError(scheduler + " on " + name + ", run " + std::to_string(k), *bad);
          }
        },
        sytest::run_options());
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, MpiExchange, ::testing::ValuesIn(kSchedulers),
                         [](const auto& info) { return sytest::identifier(info.param); });

TEST(MpiRedistribution, GridsThatSpanNodes) {
  const rd::Layout src({2999}, rd::Distribution::parse("cyclic(6)@4")), dst({2999}, rd::Distribution::parse("cyclic(2)@6"));
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

}  // namespace
