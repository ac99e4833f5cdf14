// The online schemes, AC (with and without strip mining) and DRS_N, on the same
// cases as the executor, every received byte verified; DRS_N's inquiries and the
// exclusivity its busy locks guarantee; and the exchange driver that runs them
// all beside the static schedulers.

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <switchyard/schedulers/generate_recv.hpp>
#include <switchyard/schedulers/online.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>
#include <tuple>
#include <vector>

#include "exchange_cases.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

void run_ac(const CommMatrix& m, AcOptions ac = {}, std::size_t ring_capacity = 1024, int repeat = 2) {
  sytest::runtime().run(
      m.size(),
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 7);
        for (int rep = 0; rep < repeat; ++rep) {
          b.poison();
          co_await p.barrier();
          co_await execute_ac(p, b, ac);
          co_await p.barrier();
          if (auto bad = b.verify()) throw PayloadError("ac repetition " + std::to_string(rep), *bad);
        }
      },
      sytest::run_options(ring_capacity));
}

struct DrsnRun {
  std::uint64_t inquiries = 0;
  std::uint64_t messages = 0;
  int max_in_flight = 0;
  std::uint64_t monitored = 0;
};

// DRS_N as in the paper: Generate_Recv by active messages first, then the
// exchange, with the busy-lock monitor watching every transfer.
DrsnRun run_drsn(const CommMatrix& m, std::uint32_t retry_yields = 1, std::size_t ring_capacity = 1024,
                 int repeat = 2) {
  const Rank n = m.size();
  GenerateRecvByActiveMessages generate(n);
  BusyLockMonitor monitor(n);
  RunOptions options = sytest::run_options(ring_capacity);
  generate.install(options);
  std::vector<DrsnStats> stats(n);
  sytest::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 8);
        for (int rep = 0; rep < repeat; ++rep) {
          b.poison();
          const auto recvl = co_await generate.run(p, b.row());
          co_await p.barrier();
          const DrsnStats s =
              co_await execute_drsn(p, recvl, b, DrsnOptions{static_cast<std::uint64_t>(rep), retry_yields, &monitor});
          stats[p.rank()].inquiries += s.inquiries;
          stats[p.rank()].messages += s.messages;
          if (s.inquiries < s.messages) throw std::runtime_error("fewer inquiries than messages");
          if (s.messages != b.row().size()) throw std::runtime_error("not every message was sent");
          co_await p.barrier();
          if (auto bad = b.verify()) throw PayloadError("drsn repetition " + std::to_string(rep), *bad);
        }
      },
      options);
  DrsnRun r;
  for (const auto& s : stats) {
    r.inquiries += s.inquiries;
    r.messages += s.messages;
  }
  r.max_in_flight = monitor.max_in_flight();
  r.monitored = monitor.transfers();
  EXPECT_EQ(r.messages, m.messages() * repeat);
  EXPECT_GE(r.inquiries, r.messages);
  EXPECT_EQ(r.monitored, r.messages);
  EXPECT_LE(r.max_in_flight, 1) << "two DRS_N senders transferred to one receiver at once";
  if (m.messages()) {
    EXPECT_EQ(r.max_in_flight, 1);
  }
  return r;
}

class Online : public ::testing::TestWithParam<Rank> {};

TEST_P(Online, AcUniformAndNonuniform) {
  run_ac(sytest::uniform_case(GetParam()));
  run_ac(sytest::nonuniform_case(GetParam()));
}

TEST_P(Online, AcStripMinedWithOnePacketRings) {
  const CommMatrix m = sytest::nonuniform_case(GetParam());
  for (std::size_t strip : {1, 2, 3, 4}) {
    SCOPED_TRACE("strip " + std::to_string(strip));
    run_ac(m, AcOptions{strip}, 1, 1);
  }
}

TEST_P(Online, DrsnUniformAndNonuniform) {
  run_drsn(sytest::uniform_case(GetParam()));
  run_drsn(sytest::nonuniform_case(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(AllCounts, Online, ::testing::ValuesIn(sytest::kProcessCounts),
                         [](const auto& info) { return std::string("n").append(std::to_string(info.param)); });

TEST(OnlineCorners, AcEmptyRowsSelfMessagesDenseRowsAndOddSizes) {
  for (Rank n : {Rank{1}, Rank{2}, Rank{7}, Rank{33}}) {
    for (const auto& c : sytest::special_cases(n)) {
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      run_ac(c.m);
      run_ac(c.m, AcOptions{2}, 1, 1);
    }
  }
}

TEST(OnlineCorners, DrsnEmptyRowsSelfMessagesDenseRowsAndOddSizes) {
  for (Rank n : {Rank{1}, Rank{2}, Rank{7}, Rank{33}}) {
    for (const auto& c : sytest::special_cases(n)) {
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      run_drsn(c.m);
    }
  }
}

TEST(OnlineCorners, DrsnWithOnePacketRingsAndRetryDelay) {
  for (Rank n : {Rank{7}, Rank{32}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    run_drsn(sytest::nonuniform_case(n), 1, 1);
    run_drsn(sytest::nonuniform_case(n), 4, 1);
  }
}

// Everyone sends 64 KiB to rank 0 at once: the senders must queue on rank 0's
// busy lock, so there are more inquiries than messages, and still never two
// transfers into rank 0 at a time.
TEST(Drsn, ContendedReceiverTakesOneMessageAtATime) {
  CommMatrix m(64);
  for (Rank i = 0; i < 64; ++i) {
    m.set(i, 0, 65536);
    m.set(i, (i + 1) % 64, 65536);
  }
  const DrsnRun r = run_drsn(m, 1, 1024, 3);
  EXPECT_GT(r.inquiries, r.messages);
  EXPECT_EQ(r.max_in_flight, 1);
}

TEST(Drsn, RejectsAReceivingVectorThatDisagreesWithTheBuffers) {
  const CommMatrix m = fig7_matrix(4, 2, 64, 3);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    EXPECT_THROW(sytest::runtime().run(
                     4,
                     [&](Process& p) -> Task<void> {
                       ExchangeBuffers b(m, p.rank(), 1);
                       std::vector<MatrixEntry> recvl(b.column().begin(), b.column().end());
                       if (variant == 0) recvl.pop_back();  // a message nobody would receive
                       if (variant == 1) recvl[0].bytes += 1;  // the wrong size
                       if (variant == 2) std::swap(recvl[0], recvl[1]);  // not sorted by source
                       co_await execute_drsn(p, recvl, b);
                     },
                     sytest::run_options()),
                 InvalidArgument);
  }
}

TEST(BusyLockMonitor, CountsOverlap) {
  BusyLockMonitor monitor(3);
  monitor.enter(1);
  monitor.enter(2);
  EXPECT_EQ(monitor.max_in_flight(), 1);
  monitor.enter(1);
  EXPECT_EQ(monitor.max_in_flight(), 2);
  monitor.leave(1);
  monitor.leave(1);
  monitor.leave(2);
  EXPECT_EQ(monitor.transfers(), 3u);
}

// Every scheduler's result, run one job per scheduler or all interleaved in one.
ExchangeReport check_every_scheduler(bool interleave) {
  ExchangeOptions o;
  o.repeat = 3;
  o.run_options = sytest::run_options();
  o.interleave = interleave;
  const CommMatrix m = sytest::nonuniform_case(16);
  const ExchangeReport report = run_exchange(sytest::runtime(), m, o);
  EXPECT_EQ(report.processes, 16u);
  EXPECT_EQ(report.messages, m.messages());
  const auto names = default_exchange_schedulers();
  EXPECT_EQ(report.results.size(), names.size());
  for (std::size_t i = 0; i < std::min(names.size(), report.results.size()); ++i) {
    const SchedulerResult& r = report.results[i];
    SCOPED_TRACE(r.scheduler);
    EXPECT_EQ(r.scheduler, names[i]);
    EXPECT_TRUE(r.verified);
    EXPECT_EQ(r.comm_ms.samples.size(), 3u);
    EXPECT_GT(r.comm_ms.min, 0);
    EXPECT_LE(r.comm_ms.min, r.comm_ms.median);
    EXPECT_LE(r.comm_ms.median, r.comm_ms.max);
    EXPECT_EQ(r.is_static, r.scheduler != "ac" && r.scheduler != "drsn");
    EXPECT_EQ(r.phases.has_value(), r.is_static);
    EXPECT_EQ(r.inquiries.has_value(), r.scheduler == "drsn");
    if (r.scheduler == "ac") {
      EXPECT_EQ(r.schedule_ms.median, 0);
    }
    if (r.scheduler == "drsn") {
      EXPECT_GT(r.schedule_ms.median, 0);
      EXPECT_GE(*r.inquiries, m.messages());
    }
    if (r.phases) {
      EXPECT_GE(*r.phases, m.max_degree());
    }
  }
  EXPECT_TRUE(report.generate_recv.has_value());
  if (report.generate_recv) {
    EXPECT_GT(report.generate_recv->concat_ms.median, 0);
    EXPECT_GT(report.generate_recv->am_ms.median, 0);
  }
  return report;
}

TEST(ExchangeDriver, EverySchedulerReportsWhatItShould) { check_every_scheduler(false); }

// Interleaved, the schedulers (drsn with its active messages among them) run
// in one job, every byte checked as before: every result carries that job's
// statistics (separate jobs would each have their own switch and slot counts).
TEST(ExchangeDriver, InterleavedSchedulersRunInOneJob) {
  const ExchangeReport one_job = check_every_scheduler(true);
  ASSERT_FALSE(one_job.results.empty());
  const JobStats& job = one_job.results.front().job;
  EXPECT_GT(job.resumes, 0u);
  for (const SchedulerResult& r : one_job.results) {
    EXPECT_EQ(r.job.resumes, job.resumes);
    EXPECT_EQ(r.job.slots, job.slots);
    EXPECT_EQ(r.job.ring_full, job.ring_full);
  }
}

TEST(ExchangeDriver, StripMinedAcAndTinyRings) {
  ExchangeOptions o;
  o.repeat = 1;
  o.schedulers = {"ac", "rsnh", "drsn"};
  o.ac.strip = 2;
  o.run_options = sytest::run_options(1);
  o.time_generate_recv = false;
  const ExchangeReport report = run_exchange(sytest::runtime(), sytest::special_cases(9).back().m, o);
  ASSERT_EQ(report.results.size(), 3u);
  EXPECT_FALSE(report.generate_recv.has_value());
}

TEST(ExchangeDriver, RejectsUnknownSchedulersBeforeRunningAnything) {
  ExchangeOptions o;
  o.schedulers = {"ac", "fastest"};
  try {
    run_exchange(sytest::runtime(), fig7_matrix(4, 2, 8, 1), o);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'fastest'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ac, lp, gm, cgm, rsn, rsnh, optimal, optimal-bytes, drsn"), std::string::npos)
        << e.what();
  }
  o.schedulers = {"ac"};
  o.repeat = 0;
  EXPECT_THROW(run_exchange(sytest::runtime(), fig7_matrix(4, 2, 8, 1), o), InvalidArgument);
}

}  // namespace
