// Compiled exchange plans (the default execution) in jobs that run side by
// side on one Runtime: each job's runs copy every byte right while the other
// job's do. A submitted job whose processes wait in a compiled run that one
// of them never reaches ends when its handle cancels it.

#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <thread>
#include <vector>

#include "exchange_cases.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;
using namespace std::chrono_literals;

// On the calling thread alone: CGM's oneTBB threads synchronise in an
// uninstrumented library, which ThreadSanitizer would report as races.
ExchangePlan one_thread_plan(const CommMatrix& m) {
  tbb::task_arena one_thread(1);
  return one_thread.execute([&] { return ExchangePlan(m); });
}

// Sleeps until `flag` is set, at most 10 s (jobs that never meet fail, not hang); whether it was.
Task<bool> until_set(Process& p, const std::atomic<bool>& flag) {
  const auto until = Process::Clock::now() + 10s;
  while (!flag.load()) {
    if (Process::Clock::now() > until) co_return false;
    co_await p.sleep_for(1ms);
  }
  co_return true;
}

// The buffers of one process's part of `m`, as run()'s spans.
struct Spans {
  std::vector<std::span<const std::byte>> sends;
  std::vector<std::span<std::byte>> recvs;
  explicit Spans(ExchangeBuffers& b) : sends(b.send_buffers()), recvs(b.recv_buffers()) {}
};

TEST(PlansSideBySide, CompiledRunsInTwoJobsAtOnce) {
  Runtime rt;
  const CommMatrix matrices[2] = {sytest::uniform_case(12), sytest::nonuniform_case(16)};
  const ExchangePlan plans[2] = {one_thread_plan(matrices[0]), one_thread_plan(matrices[1])};
  std::atomic<bool> started[2] = {false, false};
  std::exception_ptr errors[2];
  auto job = [&](int id) {
    try {
      const CommMatrix& m = matrices[id];
      rt.run(m.size(), [&, id](Process& p) -> Task<void> {
        started[id] = true;
        SY_CHECK(co_await until_set(p, started[1 - id]), "job " << id << " never saw the other start");
        ExchangeBuffers b(m, p.rank(), 31 + id);
        Spans spans(b);
        for (int k = 0; k < 40; ++k) {
          b.poison();
          co_await p.barrier();
          co_await plans[id].run(p, spans.sends, spans.recvs);
          if (auto bad = b.verify())
            throw PayloadError("job " + std::to_string(id) + ", run " + std::to_string(k), *bad);
        }
      });
    } catch (...) {
      errors[id] = std::current_exception();
    }
  };
  std::thread a(job, 0), b(job, 1);
  a.join();
  b.join();
  for (auto& e : errors) EXPECT_NO_THROW(if (e) std::rethrow_exception(e));
}

TEST(PlansSideBySide, CancelWakesACompiledRunThatOneProcessNeverReaches) {
  Runtime rt;
  const CommMatrix m = sytest::uniform_case(8);
  const ExchangePlan plan = one_thread_plan(m);
  std::atomic<int> arrived{0};
  RunOptions options;
  options.stall_timeout = std::chrono::minutes(10);  // ended by the cancel, not the watchdog
  JobHandle h = rt.submit(
      8,
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 3);
        Spans spans(b);
        arrived.fetch_add(1);
        if (p.rank() == 5) {
          (void)co_await p.recv(kAnySource, 77);  // never sent: rank 5 never runs the plan
          co_return;
        }
        co_await plan.run(p, spans.sends, spans.recvs);
        SY_CHECK(false, "rank " << p.rank() << "'s run ended without rank 5");
      },
      options);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (arrived.load() < 8 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);  // the others into the run
  h.cancel();
  ASSERT_TRUE(h.wait_for(10s));
  EXPECT_THROW(h.wait(), JobCancelled);
}

}  // namespace
