// ExchangePlan's split phase (start, then wait): every byte of every run
// checked in each execution and buffer form (a binding's start included), with processes far beyond the
// cores and at one per core, work between the two; a one-way pattern whose
// receiver completes while its sender has only started (the compiled run's
// overlap); misuse (a second start, a wait without a start) refused with its
// message; a plan destroyed with a run in flight ending the job with an error
// naming the plan and the process.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <thread>
#include <vector>

#include "exchange_cases.hpp"
#include "exchange_forms.hpp"
#include "made_on_use.hpp"  // schedulers/runtime/src
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;
using sytest::BufferForms;
using sytest::Execution;
using sytest::kExecutions;

// Work of the process's own between a start and its wait: sums that it
// checks, and yields that let its core's other processes (and their starts
// and waits) run meanwhile.
Task<void> interior_work(Process& p, int k) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) sum += i * static_cast<std::uint64_t>(k + 1);
  SY_CHECK(sum == 499500u * static_cast<std::uint64_t>(k + 1), "the interior work");
  for (Rank y = 0; y < 1 + p.rank() % 3; ++y) co_await p.yield();
}

// Run k as a split phase, through the spans, the blocks, the hooks and (given
// one) a binding of the spans (BoundExchange::start) in turn.
Task<void> split_run(const ExchangePlan& plan, Process& p, BufferForms& forms, int k, BoundExchange* bound = nullptr) {
  std::optional<BufferForms::CountingHooks> hooks;
  const int form = k % (bound ? 4 : 3);
  if (form == 0) {
    plan.start(p, forms.sends, forms.recvs);
  } else if (form == 1) {
    plan.start(p, forms.send_block, forms.send_at, forms.recv_block, forms.recv_at);
  } else if (form == 2) {
    hooks.emplace(forms);
    plan.start(p, *hooks);
  } else {
    bound->start();
  }
  co_await interior_work(p, k);
  co_await plan.wait(p);
  if (hooks) SY_CHECK(hooks->each_once(), "a hook ran more or less than once per message");
}

// `runs` split runs of the plan (from the whole pattern or by create()), every byte checked.
void split_many(const CommMatrix& m, const std::string& scheduler, bool collective, const Execution& how, int runs) {
  const Rank n = m.size();
  ExchangePlanOptions options = sytest::with_execution(ExchangePlanOptions{.scheduler = scheduler}, how);
  std::optional<ExchangePlan> global;
  if (!collective) global.emplace(m, options);
  sytest::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 41);
        BufferForms forms(b, n);
        std::optional<ExchangePlan> mine;
        if (collective) mine = co_await ExchangePlan::create(p, m.row(p.rank()), options);
        const ExchangePlan& plan = collective ? *mine : *global;
        BoundExchange bound = plan.bind(p, forms.sends, forms.recvs);
        for (int k = 0; k < runs; ++k) {
          b.poison();
          co_await p.barrier();
          co_await split_run(plan, p, forms, k, &bound);
          if (auto bad = b.verify()) throw PayloadError(scheduler + ", split run " + std::to_string(k), *bad);
        }
        // The plain run still follows a split one, and a split one a plain one.
        co_await plan.run(p, forms.sends, forms.recvs);
        co_await split_run(plan, p, forms, 0);
        if (auto bad = b.verify()) throw PayloadError(scheduler + ", after a plain run", *bad);
      },
      sytest::run_options(how.ring_capacity));
}

class SplitRuns : public ::testing::TestWithParam<std::tuple<std::string, Execution>> {};

// At 2 processes (one per core), 16, and 100 (far beyond the cores).
TEST_P(SplitRuns, EveryByteAsARunGives) {
  const auto& [scheduler, how] = GetParam();
  const std::vector<sytest::Case> cases{{"fig7_n2", fig7_matrix(2, 1, 3000, 5)},
                                        {"nonuniform_n16", sytest::nonuniform_case(16)},
                                        {"fig7_n100", fig7_matrix(100, 6, 700, 9)}};
  for (const auto& c : cases) {
    for (const bool collective : {false, true}) {
      SCOPED_TRACE(c.name + (collective ? ", create()" : ", whole pattern"));
      split_many(c.m, scheduler, collective, how, 9);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, SplitRuns,
                         ::testing::Combine(::testing::Values("ac", "drsn", "optimal"),
                                            ::testing::ValuesIn(kExecutions)),
                         [](const auto& info) {
                           return sytest::identifier(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
                         });

// Rank 0 sends to rank 1 alone, each on a core of its own: compiled (pull),
// rank 1's wait completes while rank 0 has only started, which then waits
// for rank 1 to say so. Were rank 0's start not to publish its buffers, rank
// 1's wait would not end.
TEST(ExchangePlanSplit, TheReceiverCompletesWhileTheSenderHasOnlyStarted) {
  CommMatrix m(2);
  m.set(0, 1, 5000);
  const ExchangePlan plan(m, ExchangePlanOptions{.scheduler = "optimal"});
  for (int trial = 0; trial < 50; ++trial) {
    std::atomic<bool> received{false};
    sytest::runtime().run(
        2,
        [&](Process& p) -> Task<void> {
          ExchangeBuffers b(m, p.rank(), static_cast<std::uint64_t>(trial));
          BufferForms forms(b, 2);
          BoundExchange bound = plan.bind(p, forms.sends, forms.recvs);
          if (trial % 2 == 0) {
            plan.start(p, forms.sends, forms.recvs);
          } else {
            bound.start();  // a binding's start publishes as well
          }
          if (p.rank() == 0) {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (!received.load(std::memory_order_acquire)) {
              SY_CHECK(std::chrono::steady_clock::now() < deadline,
                       "rank 1's wait did not end while rank 0 had only started");
              co_await p.yield();
            }
          }
          co_await plan.wait(p);
          if (p.rank() == 1) {
            if (auto bad = b.verify()) throw PayloadError("the one-way split run", *bad);
            received.store(true, std::memory_order_release);  // pairs with rank 0's acquire
          }
        },
        sytest::run_options());
  }
}

// The message of what `job` throws, which must be an InvalidArgument.
template <class Job>
std::string invalid_argument_of(Job job) {
  try {
    job();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

TEST(ExchangePlanSplit, ASecondStartBeforeTheWaitIsRefused) {
  const CommMatrix m = sytest::nonuniform_case(4);
  for (const Execution& how : kExecutions) {
    SCOPED_TRACE(how.name);
    const ExchangePlan plan(m, sytest::with_execution({.scheduler = "optimal"}, how));
    const std::string what = invalid_argument_of([&] {
      sytest::runtime().run(
          4,
          [&](Process& p) -> Task<void> {
            ExchangeBuffers b(m, p.rank(), 3);
            BufferForms forms(b, 4);
            plan.start(p, forms.sends, forms.recvs);
            if (p.rank() == 2) plan.start(p, forms.sends, forms.recvs);
            co_await plan.wait(p);
          },
          sytest::run_options(how.ring_capacity));
    });
    EXPECT_NE(what.find("ExchangePlan::start on rank 2: a second start before the wait"), std::string::npos) << what;
    // A binding's start is refused as well after a start of its member.
    const std::string bound_what = invalid_argument_of([&] {
      sytest::runtime().run(
          4,
          [&](Process& p) -> Task<void> {
            ExchangeBuffers b(m, p.rank(), 3);
            BufferForms forms(b, 4);
            BoundExchange bound = plan.bind(p, forms.sends, forms.recvs);
            bound.start();
            if (p.rank() == 1) bound.start();
            co_await plan.wait(p);
          },
          sytest::run_options(how.ring_capacity));
    });
    EXPECT_NE(bound_what.find("BoundExchange::start on rank 1: a second start before the wait"), std::string::npos)
        << bound_what;
    // The failed job's run in flight is not the next job's: it starts and waits anew.
    sytest::runtime().run(
        4,
        [&](Process& p) -> Task<void> {
          ExchangeBuffers b(m, p.rank(), 4);
          BufferForms forms(b, 4);
          co_await split_run(plan, p, forms, 0);
          if (auto bad = b.verify()) throw PayloadError("after a failed job", *bad);
        },
        sytest::run_options(how.ring_capacity));
  }
}

TEST(ExchangePlanSplit, AWaitWithoutAStartIsRefused) {
  const CommMatrix m = sytest::nonuniform_case(4);
  for (const Execution& how : kExecutions) {
    SCOPED_TRACE(how.name);
    const ExchangePlan plan(m, sytest::with_execution({.scheduler = "ac"}, how));
    const std::string what = invalid_argument_of([&] {
      sytest::runtime().run(
          4,
          [&](Process& p) -> Task<void> {
            ExchangeBuffers b(m, p.rank(), 3);
            BufferForms forms(b, 4);
            co_await split_run(plan, p, forms, 0);
            if (p.rank() == 1) co_await plan.wait(p);  // its run's wait was the one above
          },
          sytest::run_options(how.ring_capacity));
    });
    EXPECT_NE(what.find("ExchangePlan::wait on rank 1: no start to wait for"), std::string::npos) << what;
  }
}

// Each process's plan from create(); rank `victim` destroys its own between
// a start and the wait, while the others wait for it. The job ends with an
// Error naming the plan and the process, the buffers intact until then.
TEST(ExchangePlanSplit, APlanDestroyedWithARunInFlightEndsTheJob) {
  const Rank n = 6;
  const CommMatrix m = fig7_matrix(n, 3, 2000, 13);
  for (const Execution& how : kExecutions) {
    for (const Rank victim : {Rank{0}, Rank{3}}) {
      SCOPED_TRACE(how.name + ", victim " + std::to_string(victim));
      const ExchangePlanOptions options = sytest::with_execution({.scheduler = "optimal"}, how);
      try {
        sytest::runtime().run(
            n,
            [&](Process& p) -> Task<void> {
              ExchangeBuffers b(m, p.rank(), 7);
              BufferForms forms(b, n);
              std::optional<ExchangePlan> plan = co_await ExchangePlan::create(p, m.row(p.rank()), options);
              co_await split_run(*plan, p, forms, 0);  // one whole split run first
              plan->start(p, forms.sends, forms.recvs);
              if (p.rank() == victim) {
                plan.reset();
                co_await p.barrier();  // the job is ending: this throws
                SY_CHECK(false, "the job went on after its plan was destroyed in flight");
              }
              co_await plan->wait(p);
            },
            sytest::run_options(how.ring_capacity));
        ADD_FAILURE() << "the job ended without an error";
      } catch (const InvalidArgument& e) {
        ADD_FAILURE() << "an InvalidArgument: " << e.what();
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("ExchangePlan (scheduler 'optimal', 6 processes) destroyed on rank " +
                            std::to_string(victim) + " (process " + std::to_string(victim) +
                            " of the job) between the start of a split-phase run and its wait"),
                  std::string::npos)
            << what;
      }
    }
  }
}

// What each member of a plan writes on every run is made by the member's
// first use of it (made_on_use.hpp): once, whoever asks first; the same object
// from then on, on any thread; one per part; none for a part never used.
TEST(MadeOnUse, EachPartIsMadeOnceByItsFirstUseAndKeptFromThenOn) {
  struct alignas(64) Counted {
    std::uint64_t uses = 0;
  };
  constexpr std::size_t kParts = 8;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    schedulers::detail::MadeOnUse<Counted> made(kParts);
    EXPECT_EQ(made.made(3), nullptr);
    // Two threads race to make part 3; both must get the same object.
    std::atomic<int> ready{0};
    Counted* seen[2]{};
    auto first_use = [&](int t) {
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      seen[t] = &made[3];
    };
    std::thread other(first_use, 1);
    first_use(0);
    other.join();
    ASSERT_NE(seen[0], nullptr);
    ASSERT_EQ(seen[0], seen[1]) << "round " << round << ": two objects made for one part";
    EXPECT_EQ(made.made(3), seen[0]);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(seen[0]) % 64, 0u) << "over-aligned type made misaligned";
    EXPECT_EQ(made.made(2), nullptr) << "a part never used was made";
    EXPECT_NE(&made[2], seen[0]);
    EXPECT_EQ(&made[3], seen[0]);
  }
}

}  // namespace
