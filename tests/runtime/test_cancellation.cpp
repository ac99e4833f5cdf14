// Cancellation and stall detection: one process throws while the others are
// blocked in every kind of wait; run() must rethrow exactly that error, not
// hang, and leave the runtime usable. A job that cannot progress must end with
// a StallError naming the blocked processes.

#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace std::chrono_literals;

// A distinct exception type: run() must rethrow this very type, not a base or a JobCancelled.
struct Boom : std::logic_error {
  explicit Boom(const std::string& what) : std::logic_error(what) {}
};

constexpr HandlerId kPoke = 1;

// After a failed or stalled job the runtime must run a normal one correctly.
void expect_usable(Runtime& rt, std::uint64_t n = 64) {
  std::atomic<std::uint64_t> ok{0};
  rt.run(n, [&](Process& p) -> Task<void> {
    const Rank next = (p.rank() + 1) % p.size(), prev = (p.rank() + p.size() - 1) % p.size();
    const auto out = sytest::pattern(2000, sytest::message_key(p.rank(), next, 0));
    SendTicket t = p.post_send(next, out);
    Message m = co_await p.recv(prev);
    SY_CHECK(sytest::first_mismatch(m.bytes(), sytest::message_key(prev, p.rank(), 0)) == std::string::npos &&
                 m.size() == 2000,
             "payload after a failed job");
    co_await p.wait(t);
    std::int64_t one = 1;
    auto s = co_await p.allreduce(std::span(&one, 1));
    SY_CHECK(s[0] == static_cast<std::int64_t>(p.size()), "allreduce after a failed job");
    ok.fetch_add(1);
  });
  EXPECT_EQ(ok.load(), n);
}

// Big payloads owned by the test, so that they outlive any unwinding.
struct Buffers {
  std::vector<std::byte> big = sytest::pattern(200'000, 7);
};

TEST(Cancellation, ThrowWhileOthersAreBlockedEverywhere) {
  Runtime rt;
  Buffers buffers;
  const std::uint64_t sizes[] = {2, 3, 32, 100, 257, 1024};
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    std::mt19937_64 rng(seed);
    const std::uint64_t n = sizes[rng() % 6];
    const Rank thrower = static_cast<Rank>(rng() % n);
    const int steps_before_throw = static_cast<int>(rng() % 6);
    const std::string message = "boom seed " + std::to_string(seed) + " rank " + std::to_string(thrower);
    RunOptions opts;
    opts.ring_capacity = seed % 3 == 0 ? 1 : 1024;
    opts.placement = seed % 2 ? Placement::round_robin() : Placement::block();
    opts.on_active_message(kPoke, [](Process&, Rank, std::span<const std::byte>) {});
    std::atomic<std::uint64_t> started{0};
    SCOPED_TRACE("seed " + std::to_string(seed) + " n=" + std::to_string(n) + " thrower " + std::to_string(thrower));
    try {
      rt.run(
          n,
          [&](Process& p) -> Task<void> {
            started.fetch_add(1);
            const Rank me = p.rank(), N = p.size();
            std::mt19937_64 local(sytest::mix(seed, me));
            if (me == thrower) {
              // A few harmless steps first, then throw at a point that depends on the seed.
              for (int s = 0; s < steps_before_throw; ++s) {
                switch (local() % 3) {
                  case 0:
                    co_await p.yield();
                    break;
                  case 1:
                    p.post_active(static_cast<Rank>(local() % N), kPoke, {});
                    break;
                  case 2: {
                    // An eager message nobody receives: it waits as unexpected.
                    const std::byte b[8]{};
                    co_await p.send(static_cast<Rank>(local() % N), b, 100);
                    break;
                  }
                }
              }
              throw Boom(message);
            }
            // Everybody else blocks, in one of several ways.
            switch ((me + seed) % 6) {
              case 0:
                (void)co_await p.recv(thrower, 3);
                break;  // by source
              case 1:
                (void)co_await p.recv(kAnySource, 4);
                break;  // any source
              case 2:
                co_await p.send(thrower, buffers.big, 5);
                break;  // single-copy send
              case 3:
                co_await p.barrier();
                break;  // collective
              case 4:
                co_await p.wait_until([] { return false; }, "never");
                break;  // a condition
              case 5: {  // a posted receive
                std::vector<std::byte> into(10);
                RecvTicket t = p.post_recv_into(thrower, into, 6);
                co_await p.wait(t);
                break;
              }
            }
            throw sytest::CheckFailed("rank " + std::to_string(me) + " was unblocked");
          },
          opts);
      ADD_FAILURE() << "run returned normally";
    } catch (const Boom& e) {
      EXPECT_EQ(std::string(e.what()), message);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong exception: " << e.what();
    }
    if (HasFailure()) break;
    if (seed % 10 == 9) expect_usable(rt, 32);
  }
  expect_usable(rt);
}

TEST(Cancellation, ThrowInTheMiddleOfTraffic) {
  // Every process exchanges messages in a ring; one throws at a random round.
  // Others may be mid-collective, mid-receive or mid-send at that moment, and
  // their payloads live in their own frames: the runtime must stop reading
  // them before they unwind (ASan would see a use after free otherwise). The
  // thrower itself has no send in flight when it throws.
  Runtime rt;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    std::mt19937_64 rng(seed + 1000);
    const std::uint64_t n = std::vector<std::uint64_t>{2, 3, 33, 512}[rng() % 4];
    const Rank thrower = static_cast<Rank>(rng() % n);
    const int throw_round = static_cast<int>(rng() % 10);
    RunOptions opts;
    opts.ring_capacity = seed % 2 ? 1 : 1024;
    try {
      rt.run(
          n,
          [&](Process& p) -> Task<void> {
            const Rank me = p.rank(), N = p.size();
            const Rank next = (me + 1) % N, prev = (me + N - 1) % N;
            for (int round = 0; round < 1000; ++round) {
              if (me == thrower && round == throw_round) throw Boom("traffic " + std::to_string(seed));
              const std::size_t size = (me + round) % 3 == 0 ? 100'000 : 40;  // single-copy or eager
              const auto mine = sytest::pattern(size, sytest::message_key(me, next, round));
              SendTicket t = p.post_send(next, mine);
              Message m = co_await p.recv(prev);
              const std::size_t want = (prev + round) % 3 == 0 ? 100'000 : 40;
              SY_CHECK(m.size() == want &&
                           sytest::first_mismatch(m.bytes(), sytest::message_key(prev, me, round)) == std::string::npos,
                       "ring payload");
              co_await p.wait(t);
              if (round % 2) co_await p.barrier();
            }
          },
          opts);
      ADD_FAILURE() << "seed " << seed << ": run returned normally";
    } catch (const Boom& e) {
      EXPECT_EQ(std::string(e.what()), "traffic " + std::to_string(seed));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ": wrong exception " << e.what();
    }
  }
  expect_usable(rt);
}

TEST(Cancellation, ThrowBeforeAnyoneElseStarted) {
  Runtime rt;
  for (std::uint64_t n : {1u, 2u, 1024u}) {
    EXPECT_THROW(rt.run(n,
                        [&](Process& p) -> Task<void> {
                          if (p.rank() == 0) throw Boom("first");
                          co_await p.barrier();
                        }),
                 Boom);
  }
  expect_usable(rt);
}

TEST(Cancellation, FirstErrorWinsWhenSeveralThrow) {
  Runtime rt;
  try {
    rt.run(64, [&](Process& p) -> Task<void> {
      co_await p.barrier();
      throw Boom("rank " + std::to_string(p.rank()));
    });
    ADD_FAILURE() << "no error";
  } catch (const Boom& e) {
    EXPECT_EQ(std::string(e.what()).rfind("rank ", 0), 0u) << e.what();
  }
  expect_usable(rt);
}

TEST(Cancellation, SwitchyardErrorsAreRethrownToo) {
  Runtime rt;
  EXPECT_THROW(rt.run(8,
                      [&](Process& p) -> Task<void> {
                        if (p.rank() == 3) throw InvalidArgument("custom invalid");
                        (void)co_await p.recv(3);
                      }),
               InvalidArgument);
  expect_usable(rt);
}

// A process throws while another core copies out of its buffer (a single-copy
// send posted from a vector of its own frame, not yet waited for). Unwinding
// must wait until that copy is withdrawn or done: under ASan a read of the freed
// vector is a report; without it, a crash or a wrong payload. Both orders: the
// receive posted before the send (copied as the packet arrives) and after it
// (copied from the unexpected envelope).
TEST(Cancellation, ThrowWithSingleCopySendInFlight) {
  Runtime rt;
  const int a = rt.cores().front(), b = rt.cores().back();
  RunOptions opts;
  opts.placement = Placement::explicit_map({a, b});
  std::vector<std::byte> target(1 << 20);
  int rethrown = 0;
  constexpr int kTrials = 1000;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::uint64_t size = trial % 2 ? std::uint64_t{1} << 20 : 2000;  // both above the eager limit
    const bool receive_first = trial % 4 < 2;
    try {
      rt.run(
          2,
          [&](Process& p) -> Task<void> {
            if (p.rank() == 1) {
              if (!receive_first) co_await p.yield();
              (void)co_await p.recv_into(0, std::span(target).first(size));
              co_return;
            }
            if (receive_first) co_await p.yield();
            std::vector<std::byte> mine = sytest::pattern(size, static_cast<std::uint64_t>(trial));
            SendTicket t = p.post_send(1, mine);
            throw Boom("thrown with a send in flight");
          },
          opts);
    } catch (const Boom&) {
      ++rethrown;
    }
  }
  EXPECT_EQ(rethrown, kTrials) << "run rethrows the process's own exception every time";
  expect_usable(rt);
}

// A process that computes without ever yielding cannot be pre-empted; the
// watchdog must still name it (rank and core) within about one stall timeout,
// and the job fails with that diagnostic as soon as it yields.
TEST(Stall, ProcessThatNeverYieldsIsNamed) {
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 200ms;
  const int core = rt.cores()[0];
  constexpr auto kSpin = 1500ms;
  try {
    rt.run(
        4,
        [&](Process& p) -> Task<void> {
          if (p.rank() == 0) {
            const auto until = std::chrono::steady_clock::now() + kSpin;
            while (std::chrono::steady_clock::now() < until) {
            }
            co_await p.yield();
          }
          co_await p.barrier();
        },
        opts);
    ADD_FAILURE() << "no StallError";
  } catch (const StallError& e) {
    const std::string what = e.what();
    const std::string head = "rank 0 (core " + std::to_string(core) + ") is running: for ";
    const auto at = what.find(head);
    ASSERT_NE(at, std::string::npos) << what;
    EXPECT_NE(what.find("without yielding"), std::string::npos) << what;
    EXPECT_NE(what.find("did not yield for 200 ms"), std::string::npos) << what;
    // Seen while it was still running, not after.
    EXPECT_LT(std::stoll(what.substr(at + head.size())), 1000) << what;
  }
  expect_usable(rt);
}

// The lines of a stall report that begin with `head` (each process has a line of its own).
std::vector<std::string> lines_beginning(const std::string& report, const std::string& head) {
  std::vector<std::string> out;
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  " + head, 0) == 0) out.push_back(line);
  }
  return out;
}

// A stall report that misnamed: rank 0 computes without yielding past the
// stall timeout, then joins a barrier; rank 1, on the other core, waits in
// that barrier. The report counts 2 processes (not 3), names rank 0 once (not
// twice), as running, and rank 1 once, as waiting in a barrier (not for "a
// message (recv)").
TEST(Stall, ARunningProcessAndABarrierAreEachNamedOnce) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores: rank 1 waits while rank 0 runs";
  const int a = rt.cores()[0], b = rt.cores()[1];
  RunOptions opts;
  opts.stall_timeout = 200ms;
  opts.placement = Placement::explicit_map({a, b});
  std::string what;
  try {
    rt.run(
        2,
        [&](Process& p) -> Task<void> {
          if (p.rank() == 0) {
            const auto until = std::chrono::steady_clock::now() + 700ms;
            while (std::chrono::steady_clock::now() < until) {
            }
          }
          co_await p.barrier();
        },
        opts);
    ADD_FAILURE() << "no StallError";
  } catch (const StallError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("2 process(es)"), std::string::npos) << what;
  const auto zero = lines_beginning(what, "rank 0 (core " + std::to_string(a) + ")");
  const auto one = lines_beginning(what, "rank 1 (core " + std::to_string(b) + ")");
  ASSERT_EQ(zero.size(), 1u) << what;
  ASSERT_EQ(one.size(), 1u) << what;
  EXPECT_NE(zero[0].find("running"), std::string::npos) << what;
  EXPECT_NE(one[0].find("waits in a barrier"), std::string::npos) << what;
  EXPECT_EQ(one[0].find("(recv)"), std::string::npos) << what;
  expect_usable(rt);
}

TEST(Stall, UnansweredReceiveNamesRankZero) {
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 300ms;
  try {
    rt.run(
        4,
        [&](Process& p) -> Task<void> {
          if (p.rank() == 0) (void)co_await p.recv(1, 9);
        },
        opts);
    ADD_FAILURE() << "no StallError";
  } catch (const StallError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0 (core " + std::to_string(rt.cores()[0]) + ") waits for"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1"), std::string::npos) << "names the peer: " << what;
    EXPECT_NE(what.find("1 process(es) blocked"), std::string::npos) << what;
    EXPECT_EQ(what.find("rank 2"), std::string::npos) << "finished ranks are not blocked: " << what;
  }
  expect_usable(rt);
}

TEST(Stall, TwoProcessesDeadlockedInRecv) {
  Runtime rt;
  const int a = rt.cores().front(), b = rt.cores().back();
  for (auto placement : {Placement::explicit_map({a, b}), Placement::explicit_map({a, a})}) {
    RunOptions opts;
    opts.stall_timeout = 300ms;
    opts.placement = placement;
    try {
      rt.run(
          2,
          [&](Process& p) -> Task<void> {
            Message m = co_await p.recv(1 - p.rank());
            (void)m;
          },
          opts);
      ADD_FAILURE() << "no StallError";
    } catch (const StallError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("rank 0 (core"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 1 (core"), std::string::npos) << what;
      EXPECT_NE(what.find("2 process(es) blocked"), std::string::npos) << what;
    }
  }
  expect_usable(rt);
}

TEST(Stall, EveryKindOfWaitIsReported) {
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 300ms;
  const std::vector<std::byte> big(100'000, std::byte{1});
  try {
    rt.run(
        6,
        [&](Process& p) -> Task<void> {
          switch (p.rank()) {
            case 0:
              (void)co_await p.recv(kAnySource, 1);
              break;
            case 1:
              co_await p.send(0, big, 2);
              break;  // single-copy, never received
            case 2:
              co_await p.wait_until([] { return false; }, "the moon");
              break;
            default:
              co_await p.barrier();
              break;  // ranks 3..5: rank 0..2 never join
          }
        },
        opts);
    ADD_FAILURE() << "no StallError";
  } catch (const StallError& e) {
    const std::string what = e.what();
    for (Rank r = 0; r < 6; ++r) {
      EXPECT_NE(what.find("rank " + std::to_string(r) + " (core"), std::string::npos) << "rank " << r << ": " << what;
    }
    EXPECT_NE(what.find("the moon"), std::string::npos) << what;
    EXPECT_NE(what.find("6 process(es) blocked"), std::string::npos) << what;
  }
  expect_usable(rt);
}

TEST(Stall, LargeStalledJob) {
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 300ms;
  try {
    rt.run(
        1024,
        [&](Process& p) -> Task<void> {
          if (p.rank() % 2 == 0) (void)co_await p.recv(p.rank() + 1);  // odd ranks just leave
        },
        opts);
    ADD_FAILURE() << "no StallError";
  } catch (const StallError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("512 process(es) blocked"), std::string::npos) << what.substr(0, 300);
    EXPECT_NE(what.find("rank 1022 (core"), std::string::npos);
    EXPECT_EQ(what.find("rank 1023 (core"), std::string::npos);
  }
  expect_usable(rt, 1024);
}

TEST(Stall, SlowButProgressingJobIsNotAStall) {
  // Progress keeps resetting the watchdog: a job much longer than the stall
  // timeout that keeps switching processes finishes normally.
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 100ms;
  std::atomic<int> done{0};
  rt.run(
      4,
      [&](Process& p) -> Task<void> {
        const auto until = std::chrono::steady_clock::now() + 600ms;
        while (std::chrono::steady_clock::now() < until) co_await p.yield();
        co_await p.barrier();
        done.fetch_add(1);
      },
      opts);
  EXPECT_EQ(done.load(), 4);
}

// Packets that move while no process runs are progress too, as when one large
// eager message crosses a full ring packet by packet, its sender and its
// receiver parked, and the sender's core sleeps between packets on a loaded
// machine. Here active messages bounce between two cores' handlers for five
// stall timeouts while both processes wait in a receive (a handler's run
// does not resume a process parked in one); the last handler's sends end them.
TEST(Stall, PacketsMovingWhileEveryProcessWaitsAreNotAStall) {
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 100ms;
  opts.placement = Placement::explicit_map({rt.cores().front(), rt.cores().back()});
  constexpr auto kBouncing = 500ms;
  constexpr HandlerId kLast = kPoke + 1;
  std::chrono::steady_clock::time_point until;  // set by rank 0 before its post; the handlers run after it
  std::atomic<std::uint64_t> bounces{0};
  const std::uint64_t word = 42;
  const auto last_word = std::as_bytes(std::span(&word, 1));
  opts.on_active_message(kPoke, [&](Process& self, Rank src, std::span<const std::byte>) {
    bounces.fetch_add(1, std::memory_order_relaxed);
    if (std::chrono::steady_clock::now() < until) return self.post_active(src, kPoke, {});
    const SendTicket sent = self.post_send(src, last_word);  // buffered: complete at once
    self.post_active(src, kLast, {});
  });
  opts.on_active_message(kLast, [&](Process& self, Rank src, std::span<const std::byte>) {
    const SendTicket sent = self.post_send(src, last_word);
  });
  const auto started = std::chrono::steady_clock::now();
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        if (p.rank() == 0) {
          until = std::chrono::steady_clock::now() + kBouncing;
          p.post_active(1, kPoke, {});
        }
        const Message m = co_await p.recv(1 - p.rank());
        SY_CHECK(m.size() == sizeof word && std::memcmp(m.bytes().data(), &word, sizeof word) == 0,
                 "the last handler's word");
      },
      opts);
  EXPECT_GE(std::chrono::steady_clock::now() - started, kBouncing);
  EXPECT_GE(bounces.load(), 2u);
  expect_usable(rt);
}

// Once every process has finished, packets are only handlers posting to each
// other: a job they keep going for a whole stall timeout is stalled, and says so.
TEST(Stall, HandlersPostingForeverAfterEveryProcessFinishedAreAStall) {
  Runtime rt;
  RunOptions opts;
  opts.stall_timeout = 100ms;
  opts.placement = Placement::explicit_map({rt.cores().front(), rt.cores().back()});
  // Each handler posts the next, for ever: only the stall's cancellation, which runs no more handlers, ends them.
  opts.on_active_message(kPoke,
                         [](Process& self, Rank src, std::span<const std::byte>) { self.post_active(src, kPoke, {}); });
  try {
    rt.run(
        2,
        [&](Process& p) -> Task<void> {
          if (p.rank() == 0) p.post_active(1, kPoke, {});
          co_return;
        },
        opts);
    ADD_FAILURE() << "no StallError";
  } catch (const StallError& e) {
    EXPECT_NE(std::string(e.what()).find("active messages kept the job going"), std::string::npos) << e.what();
  }
  expect_usable(rt);
}

}  // namespace
