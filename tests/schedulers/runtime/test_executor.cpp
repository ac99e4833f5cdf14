// The static-schedule executor: every static scheduler's schedule executed on the
// runtime, every received byte verified, on the papers' patterns (uniform and
// non-uniform sizes) and on the corners; with one-packet rings; schedules
// with contention, run as phase groups; and the verification itself, which
// must catch a single wrong byte.

#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/executor.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>
#include <tuple>
#include <vector>

#include "exchange_cases.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

// On the calling thread alone, as the exchange driver schedules: oneTBB's
// worker threads (CGM's CCOM build) synchronise in an uninstrumented library,
// which ThreadSanitizer would report as races.
Schedule one_thread_schedule(const std::string& scheduler, const CommMatrix& m, std::uint64_t seed) {
  tbb::task_arena one_thread(1);
  return one_thread.execute([&] { return make_schedule(scheduler, m, seed); });
}

// Schedules m with `scheduler`, executes the schedule `repeat` times and checks
// every received byte of every repetition; returns the schedule.
Schedule run_schedule(const std::string& scheduler, const CommMatrix& m, std::size_t ring_capacity = 1024,
                      int repeat = 2) {
  const Schedule s = one_thread_schedule(scheduler, m, 17);
  validate(s, m);
  const std::vector<ProcessPlan> plans = make_process_plans(s, m);
  sytest::runtime().run(
      m.size(),
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 99);
        for (int rep = 0; rep < repeat; ++rep) {
          b.poison();
          co_await p.barrier();
          co_await execute(p, plans[p.rank()], b);
          co_await p.barrier();
          if (auto bad = b.verify()) throw PayloadError(scheduler + " repetition " + std::to_string(rep), *bad);
        }
      },
      sytest::run_options(ring_capacity));
  return s;
}

class StaticSchedulers : public ::testing::TestWithParam<std::tuple<std::string, Rank>> {};

TEST_P(StaticSchedulers, UniformSizesEveryByteArrives) {
  const auto& [scheduler, n] = GetParam();
  run_schedule(scheduler, sytest::uniform_case(n));
}

TEST_P(StaticSchedulers, NonuniformSizesEveryByteArrives) {
  const auto& [scheduler, n] = GetParam();
  const Schedule s = run_schedule(scheduler, sytest::nonuniform_case(n));
  if (scheduler == "rsnh" && n >= 32) {
    // Make sure RS_NH's split messages, the byte ranges, were exercised.
    bool split = false;
    for (const auto& phase : s.phases) {
      for (const auto& t : phase) split |= t.offset != 0;
    }
    EXPECT_TRUE(split) << "RS_NH split no message: the byte-range path went untested";
  }
}

INSTANTIATE_TEST_SUITE_P(AllCounts, StaticSchedulers,
                         ::testing::Combine(::testing::ValuesIn(static_scheduler_names()),
                                            ::testing::ValuesIn(sytest::kProcessCounts)),
                         [](const auto& info) {
                           return sytest::identifier(std::get<0>(info.param)) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

class StaticCorners : public ::testing::TestWithParam<std::string> {};

TEST_P(StaticCorners, EmptyRowsSelfMessagesDenseRowsAndOddSizes) {
  for (Rank n : {Rank{1}, Rank{2}, Rank{7}, Rank{33}}) {
    for (const auto& c : sytest::special_cases(n)) {
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      run_schedule(GetParam(), c.m);
    }
  }
}

// One-packet rings: every multi-packet message overflows into the sender's backlog.
TEST_P(StaticCorners, RingCapacityOne) {
  for (Rank n : {Rank{7}, Rank{32}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    run_schedule(GetParam(), sytest::nonuniform_case(n), 1);
    run_schedule(GetParam(), sytest::special_cases(n).back().m, 1);
  }
}

// Large messages, many phases in flight at once: n = 32, d = 8, 64 KiB.
TEST_P(StaticCorners, LargeMessages) { run_schedule(GetParam(), fig7_matrix(32, 8, 65536, 3), 1024, 3); }

INSTANTIATE_TEST_SUITE_P(All, StaticCorners, ::testing::ValuesIn(static_scheduler_names()),
                         [](const auto& info) { return sytest::identifier(info.param); });

TEST(ProcessPlans, SkipPhasesWithoutWorkAndTagByPhase) {
  const CommMatrix m = fig7_matrix(32, 3, 64, 1);
  const Schedule s = schedule_lp(m);  // 31 phases, most of them idle for any one process
  const auto plans = make_process_plans(s, m);
  ASSERT_EQ(plans.size(), 32u);
  std::uint64_t sends = 0, recvs = 0;
  for (Rank r = 0; r < 32; ++r) {
    EXPECT_EQ(plans[r].rank, r);
    EXPECT_LE(plans[r].steps.size(), 6u);
    std::uint32_t last = 0;
    for (std::size_t k = 0; k < plans[r].steps.size(); ++k) {
      const PlanStep& st = plans[r].steps[k];
      EXPECT_TRUE(st.send_entry != PlanStep::kNone || st.recv_entry != PlanStep::kNone);
      EXPECT_EQ(st.tag, st.phase);
      if (k) {
        EXPECT_GT(st.phase, last);
      }
      last = st.phase;
      if (st.send_entry != PlanStep::kNone) {
        ++sends;
        EXPECT_EQ(m.row(r)[st.send_entry].peer, st.send_to);
      }
      if (st.recv_entry != PlanStep::kNone) {
        ++recvs;
        EXPECT_EQ(m.column(r)[st.recv_entry].peer, st.recv_from);
      }
    }
  }
  EXPECT_EQ(sends, m.messages());
  EXPECT_EQ(recvs, m.messages());
}

TEST(ProcessPlans, RejectScheduleOfAnotherMatrix) {
  const CommMatrix m = fig7_matrix(8, 2, 64, 1);
  EXPECT_THROW(make_process_plans(schedule_lp(fig7_matrix(9, 2, 64, 1)), m), InvalidArgument);
  Schedule wrong = schedule_lp(m);
  wrong.phases.push_back({Transfer{0, 0, 0, std::uint64_t{1} << 40}});  // no entry of m is that big
  EXPECT_THROW(make_process_plans(wrong, m), InvalidArgument);
}

// 1, 2, 3 -> 0 and 0 -> 1, 2, 3 all in phase 0; 0 -> 1's 3000 bytes in two
// pieces, phases 1 and 2. Rank 0 receives three messages in phase 0 and
// sends three.
std::pair<CommMatrix, Schedule> crowded() {
  CommMatrix m(4);
  Schedule s{4, "crowded", std::vector<Phase>(3)};
  for (Rank i = 1; i < 4; ++i) {
    m.set(i, 0, 100 * i);
    s.phases[0].push_back({i, 0, 0, 100 * i});
    m.set(0, i, i == 1 ? 3000 : 50 * i);
    if (i != 1) s.phases[0].push_back({0, i, 0, 50 * i});
  }
  s.phases[2].push_back({0, 1, 0, 1000});
  s.phases[1].push_back({0, 1, 1000, 2000});
  return {m, s};
}

TEST(ProcessPlans, ContentionMakesSeveralStepsOfOnePhaseOnlyWhenAllowed) {
  const auto crowd = crowded();
  const CommMatrix& m = crowd.first;
  const Schedule& s = crowd.second;
  try {
    make_process_plans(s, m);
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("phase 0: process 0 receives twice"), std::string::npos) << e.what();
  }
  const auto plans = make_process_plans(s, m, Contention::allowed);
  const auto& steps = plans[0].steps;
  ASSERT_EQ(steps.size(), 5u);  // three of phase 0, then one each of phases 1 and 2
  int recvs = 0, sends = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(steps[k].phase, 0u);
    recvs += steps[k].recv_entry != PlanStep::kNone;
    sends += steps[k].send_entry != PlanStep::kNone;
  }
  EXPECT_EQ(recvs, 3);
  EXPECT_EQ(sends, 2);
  // The split message: its first piece goes out in phase 1, its last arrives in phase 2.
  EXPECT_EQ(steps[3].phase, 1u);
  EXPECT_TRUE(steps[3].first_send_piece);
  EXPECT_EQ(steps[4].phase, 2u);
  EXPECT_FALSE(steps[4].first_send_piece);
  ASSERT_EQ(plans[1].steps.size(), 3u);
  EXPECT_FALSE(plans[1].steps[1].last_recv_piece);
  EXPECT_TRUE(plans[1].steps[2].last_recv_piece);
}

TEST(Executor, PhaseGroupsWithContentionDeliverEveryByte) {
  const auto crowd = crowded();
  const CommMatrix& m = crowd.first;
  const Schedule& s = crowd.second;
  validate(s, m, Contention::allowed);
  const auto plans = make_process_plans(s, m, Contention::allowed);
  for (std::size_t capacity : {std::size_t{1}, std::size_t{1024}}) {
    sytest::runtime().run(
        4,
        [&](Process& p) -> Task<void> {
          ExchangeBuffers b(m, p.rank(), 8);
          for (int rep = 0; rep < 3; ++rep) {
            b.poison();
            co_await p.barrier();
            co_await execute(p, plans[p.rank()], b);
            if (auto bad = b.verify()) throw PayloadError("crowded repetition " + std::to_string(rep), *bad);
          }
        },
        sytest::run_options(capacity));
  }
}

// A plan that sends the wrong message (another row entry of the same size)
// executes without complaint; only the byte check can tell.
TEST(Verification, WrongMessageIsCaughtByTheByteCheck) {
  const CommMatrix m = fig7_matrix(8, 3, 256, 4);
  const Schedule s = one_thread_schedule("cgm", m, 1);
  auto plans = make_process_plans(s, m);
  PlanStep* step = nullptr;
  for (auto& st : plans[0].steps) {
    if (st.send_entry != PlanStep::kNone) step = &st;
  }
  ASSERT_NE(step, nullptr);
  const Rank victim = step->send_to;
  step->send_entry = (step->send_entry + 1) % static_cast<std::uint32_t>(m.row(0).size());
  std::vector<std::string> errors(8);
  sytest::runtime().run(
      8,
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 3);
        co_await execute(p, plans[p.rank()], b);
        co_await p.barrier();
        if (auto bad = b.verify()) errors[p.rank()] = bad->describe();
      },
      sytest::run_options());
  for (Rank r = 0; r < 8; ++r) {
    if (r == victim) {
      EXPECT_NE(errors[r].find("of the 256-byte message 0 -> " + std::to_string(r) + " is 0x"), std::string::npos)
          << errors[r];
    } else {
      EXPECT_EQ(errors[r], "") << "rank " << r;
    }
  }
}

TEST(Verification, EveryByteIsChecked) {
  const CommMatrix m = nonuniform_matrix(5, 3, 100, 2);
  for (Rank me = 0; me < 5; ++me) {
    ExchangeBuffers b(m, me, 42);
    // Poisoned: nothing delivered yet, byte 0 of the first message is wrong.
    auto bad = b.verify();
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->src, b.column()[0].peer);
    EXPECT_EQ(bad->dst, me);
    EXPECT_EQ(bad->offset, 0u);
    // "Deliver" every message as the sender filled it.
    for (std::size_t i = 0; i < b.column().size(); ++i) {
      const ExchangeBuffers sender(m, b.column()[i].peer, 42);
      const auto out = sender.send_buffer(*sender.send_index(me));
      ASSERT_EQ(out.size(), b.recv_buffer(i).size());
      std::memcpy(b.recv_buffer(i).data(), out.data(), out.size());
    }
    EXPECT_FALSE(b.verify().has_value());
    // One flipped bit anywhere, the last byte of the last message included, is found exactly there.
    for (std::size_t i = 0; i < b.column().size(); ++i) {
      const auto buf = b.recv_buffer(i);
      for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{buf.size() / 2}, std::uint64_t{buf.size() - 1}}) {
        buf[offset] ^= std::byte{0x10};
        bad = b.verify();
        ASSERT_TRUE(bad.has_value());
        EXPECT_EQ(bad->src, b.column()[i].peer);
        EXPECT_EQ(bad->dst, me);
        EXPECT_EQ(bad->offset, offset);
        EXPECT_EQ(bad->size, buf.size());
        EXPECT_EQ(bad->got ^ bad->expected, 0x10);
        buf[offset] ^= std::byte{0x10};
      }
    }
    EXPECT_FALSE(b.verify().has_value());
  }
}

TEST(Verification, PayloadDependsOnSeedPairAndOffset) {
  std::vector<std::byte> a(1000), b(1000);
  fill_payload(a, 1, 2, 3);
  EXPECT_FALSE(first_wrong_byte(a, 1, 2, 3).has_value());
  EXPECT_EQ(first_wrong_byte(a, 2, 2, 3), std::optional<std::uint64_t>(0));  // another run
  EXPECT_EQ(first_wrong_byte(a, 1, 3, 2), std::optional<std::uint64_t>(0));  // the reverse pair
  // A piece at an unaligned offset is the same bytes as the whole message there.
  fill_payload(std::span(b).subspan(0, 333), 1, 2, 3, 333);
  EXPECT_EQ(std::memcmp(a.data() + 333, b.data(), 333), 0);
  EXPECT_FALSE(first_wrong_byte(std::span(a).subspan(333, 333), 1, 2, 3, 333).has_value());
  EXPECT_EQ(first_wrong_byte(std::span(a).subspan(333, 333), 1, 2, 3, 334), std::optional<std::uint64_t>(0));
  // Poison is the complement, byte for byte.
  fill_poison(b, 1, 2, 3);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], ~b[i]) << i;
}

TEST(Verification, ErrorNamesPairAndOffset) {
  const PayloadError e("exchange: scheduler 'cgm', repetition 2", PayloadMismatch{3, 5, 17, 1024, 0x34, 0x12});
  EXPECT_STREQ(
      e.what(),
      "exchange: scheduler 'cgm', repetition 2: byte 17 of the 1024-byte message 3 -> 5 is 0x12, expected 0x34");
}

}  // namespace
