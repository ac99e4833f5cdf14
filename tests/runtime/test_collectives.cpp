// Collectives: barrier, allgather, allgather_value, allreduce, exclusive_scan and
// broadcast, each checked on every process against a sequential reference
// computed by the test.

#include <switchyard/runtime.hpp>
#include <switchyard/trace.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <sstream>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using sytest::mix;
using sytest::pattern;

// --- what each rank contributes in round `round` (deterministic) ---

std::size_t gather_len(Rank r, std::uint64_t round, bool variable) {
  return variable ? static_cast<std::size_t>(mix(r, round, 1) % 13) : 8;
}
std::vector<std::byte> gather_input(Rank r, std::uint64_t round, bool variable) {
  return pattern(gather_len(r, round, variable), mix(r, round, 2));
}
std::vector<std::int64_t> vector_input(Rank r, std::uint64_t round, std::size_t len) {
  std::vector<std::int64_t> v(len);
  for (std::size_t i = 0; i < len; ++i) v[i] = static_cast<std::int64_t>(mix(r, round, i, 3) % 2'000'001) - 1'000'000;
  return v;
}
std::vector<std::byte> broadcast_input(Rank root, std::uint64_t round, std::size_t size) {
  return pattern(size, mix(root, round, size, 4));
}

struct Value {
  std::uint32_t rank;
  std::uint32_t x;
  std::uint64_t y;
};
Value value_input(Rank r, std::uint64_t round) {
  return Value{r, static_cast<std::uint32_t>(mix(r, round, 5)), mix(r, round, 6)};
}

// --- sequential references ---

std::vector<std::byte> ref_allgather(Rank n, std::uint64_t round, bool variable) {
  std::vector<std::byte> out;
  for (Rank r = 0; r < n; ++r) {
    auto in = gather_input(r, round, variable);
    out.insert(out.end(), in.begin(), in.end());
  }
  return out;
}
std::vector<std::int64_t> ref_allreduce(Rank n, std::uint64_t round, std::size_t len) {
  std::vector<std::int64_t> sum(len, 0);
  for (Rank r = 0; r < n; ++r) {
    auto v = vector_input(r, round, len);
    for (std::size_t i = 0; i < len; ++i) sum[i] += v[i];
  }
  return sum;
}
std::vector<std::vector<std::int64_t>> ref_scan(Rank n, std::uint64_t round, std::size_t len) {
  std::vector<std::vector<std::int64_t>> out(n);
  std::vector<std::int64_t> running(len, 0);
  for (Rank r = 0; r < n; ++r) {
    out[r] = running;
    auto v = vector_input(r, round, len);
    for (std::size_t i = 0; i < len; ++i) running[i] += v[i];
  }
  return out;
}

enum Kind { kBarrier, kAllgather, kAllgatherVariable, kAllgatherValue, kAllreduce, kScan, kBroadcast, kKinds };

// One collective of a given kind, round and shape; references computed lazily,
// once, by the test thread before the job.
struct Step {
  Kind kind = kBarrier;
  std::uint64_t round = 0;
  std::size_t len = 0;  // allreduce / scan vector length, broadcast size
  Rank root = 0;
  std::vector<std::byte> want_bytes;
  std::vector<std::int64_t> want_sum;
  std::vector<std::vector<std::int64_t>> want_scan;
};

Step make_step(Kind kind, std::uint64_t round, Rank n, std::mt19937_64& rng) {
  Step s;
  s.kind = kind;
  s.round = round;
  switch (kind) {
    case kAllgather:
      s.want_bytes = ref_allgather(n, round, false);
      break;
    case kAllgatherVariable:
      s.want_bytes = ref_allgather(n, round, true);
      break;
    case kAllreduce:
      s.len = std::vector<std::size_t>{0, 1, 5, 300}[rng() % 4];
      s.want_sum = ref_allreduce(n, round, s.len);
      break;
    case kScan:
      s.len = std::vector<std::size_t>{1, 3, 64}[rng() % 3];
      s.want_scan = ref_scan(n, round, s.len);
      break;
    case kBroadcast: {
      const Rank roots[] = {0, n - 1, n / 2, static_cast<Rank>(rng() % n)};
      s.root = roots[rng() % 4];
      s.len = std::vector<std::size_t>{0, 7, 32, 33, 1025, 5000, 100'000}[rng() % 7];
      s.want_bytes = broadcast_input(s.root, round, s.len);
      break;
    }
    default:
      break;
  }
  return s;
}

// Runs the step on process p and checks the result.
Task<void> do_step(Process& p, const Step& s) {
  const Rank r = p.rank(), n = p.size();
  switch (s.kind) {
    case kBarrier:
      co_await p.barrier();
      break;
    case kAllgather:
    case kAllgatherVariable: {
      const auto in = gather_input(r, s.round, s.kind == kAllgatherVariable);
      const auto got = co_await p.allgather(in);
      SY_CHECK(got == s.want_bytes, "allgather round " << s.round << " on rank " << r << ": " << got.size()
                                                       << " bytes, expected " << s.want_bytes.size());
      break;
    }
    case kAllgatherValue: {
      const auto got = co_await p.allgather_value(value_input(r, s.round));
      SY_CHECK(got.size() == n, "allgather_value size " << got.size());
      for (Rank q = 0; q < n; ++q) {
        const Value want = value_input(q, s.round);
        SY_CHECK(got[q].rank == want.rank && got[q].x == want.x && got[q].y == want.y,
                 "allgather_value round " << s.round << " on rank " << r << ": entry " << q);
      }
      break;
    }
    case kAllreduce: {
      const auto in = vector_input(r, s.round, s.len);
      const auto got = co_await p.allreduce(in);
      SY_CHECK(got == s.want_sum, "allreduce round " << s.round << " on rank " << r);
      break;
    }
    case kScan: {
      const auto in = vector_input(r, s.round, s.len);
      const auto got = co_await p.exclusive_scan(in);
      SY_CHECK(got == s.want_scan[r], "exclusive_scan round " << s.round << " on rank " << r);
      break;
    }
    case kBroadcast: {
      // Non-roots pass garbage of another size: it must be ignored.
      const auto in = r == s.root ? broadcast_input(s.root, s.round, s.len) : pattern(r % 50, r);
      const auto got = co_await p.broadcast(s.root, in);
      SY_CHECK(got == s.want_bytes, "broadcast round " << s.round << " from root " << s.root << " on rank " << r << ": "
                                                       << got.size() << " bytes, expected " << s.len);
      break;
    }
    default:
      break;
  }
}

void run_steps(Runtime& rt, std::uint64_t n, const std::vector<Step>& steps,
               Placement placement = Placement::round_robin()) {
  std::atomic<std::uint64_t> done{0};
  RunOptions opts;
  opts.placement = std::move(placement);
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        for (const Step& s : steps) {
          co_await do_step(p, s);
          done.fetch_add(1, std::memory_order_relaxed);
        }
      },
      opts);
  EXPECT_EQ(done.load(), n * steps.size());
}

std::vector<Step> every_kind(Rank n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Step> steps;
  std::uint64_t round = seed * 100;
  for (int k = 0; k < kKinds; ++k) steps.push_back(make_step(static_cast<Kind>(k), round++, n, rng));
  // Broadcast from several roots.
  for (int i = 0; i < 4; ++i) steps.push_back(make_step(kBroadcast, round++, n, rng));
  for (Rank root : {Rank{0}, n - 1, n / 2}) {
    Step s = make_step(kBroadcast, round++, n, rng);
    s.root = root;
    s.len = 3000;
    s.want_bytes = broadcast_input(root, s.round, s.len);
    steps.push_back(std::move(s));
  }
  return steps;
}

class Collectives : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(Collectives, EveryKindMatchesTheReference) {
  const std::uint64_t n = GetParam();
  Runtime rt;
  const auto steps = every_kind(static_cast<Rank>(n), n);
  run_steps(rt, n, steps, Placement::round_robin());
  run_steps(rt, n, steps, Placement::block());
  if (n <= 1024) run_steps(rt, n, steps, Placement::explicit_map(std::vector<int>(n, rt.cores().back())));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Collectives, ::testing::Values(1u, 2u, 3u, 32u, 512u, 1024u, 4096u),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

TEST(CollectivesSeries, ManyConsecutiveCollectives) {
  Runtime rt;
  for (auto [n, rounds] : {std::pair<Rank, int>{5, 400}, {64, 300}, {1024, 40}}) {
    std::mt19937_64 rng(n);
    std::vector<Step> steps;
    for (int i = 0; i < rounds; ++i) steps.push_back(make_step(static_cast<Kind>(rng() % kKinds), i, n, rng));
    SCOPED_TRACE("n=" + std::to_string(n));
    run_steps(rt, n, steps);
  }
}

// allgather_split: the split sees what allgather returns, once per core, and
// each member receives only the part made for it; here the bytes of the
// members whose rank is one less modulo n, in a split communicator too.
TEST(CollectivesSeries, AllgatherSplitGivesEachMemberItsPart) {
  Runtime rt;
  for (Rank n : {1u, 2u, 7u, 300u}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::atomic<int> splits{0};
    std::vector<int> wrong(n, 0);
    rt.run(n, [&](Process& p) -> Task<void> {
      const Communicator half = co_await p.world().split(p.rank() % 2, 0);
      for (const Communicator& comm : {p.world(), half}) {
        const Rank size = comm.size(), me = comm.rank();
        const std::vector<std::byte> mine(me % 5, std::byte(me & 0xff));  // members may give nothing
        const std::vector<std::byte> whole = co_await comm.allgather(mine);
        Communicator::GatherSplit split = [&, size](std::span<const std::byte> gathered, std::span<const Rank> members,
                                                    std::span<std::vector<std::byte>> parts) {
          ++splits;
          if (!std::equal(gathered.begin(), gathered.end(), whole.begin(), whole.end())) wrong[p.rank()] |= 1;
          for (std::size_t k = 0; k < members.size(); ++k) {
            const Rank from = (members[k] + size - 1) % size;
            parts[k].assign(from % 5, std::byte(from & 0xff));
          }
        };
        const std::vector<std::byte> part = co_await comm.allgather_split(mine, std::move(split));
        const Rank from = (me + size - 1) % size;
        if (part != std::vector<std::byte>(from % 5, std::byte(from & 0xff))) wrong[p.rank()] |= 2;
      }
    });
    EXPECT_EQ(std::count_if(wrong.begin(), wrong.end(), [](int w) { return w != 0; }), 0);
    // Once per core holding members of each communicator: at most 2 per core and communicator pair.
    EXPECT_LE(splits.load(), static_cast<int>(3 * rt.cores().size()));
    EXPECT_GE(splits.load(), 2);
  }
}

TEST(CollectivesSeries, BarrierReallyWaitsForEveryone) {
  // Nobody leaves barrier k before everyone has entered it: each process counts
  // arrivals before the barrier and checks the count after it.
  Runtime rt;
  for (std::uint64_t n : {2u, 3u, 32u, 1024u}) {
    const int rounds = 20;
    std::vector<std::atomic<std::uint64_t>> arrived(rounds);
    std::atomic<std::uint64_t> early{0};
    rt.run(n, [&](Process& p) -> Task<void> {
      for (int k = 0; k < rounds; ++k) {
        // Stagger: some processes yield a few times first.
        for (Rank y = 0; y < (p.rank() * 7 + k) % 4; ++y) co_await p.yield();
        arrived[k].fetch_add(1, std::memory_order_relaxed);
        co_await p.barrier();
        if (arrived[k].load(std::memory_order_relaxed) != p.size()) early.fetch_add(1);
      }
    });
    EXPECT_EQ(early.load(), 0u) << "n=" << n;
    for (int k = 0; k < rounds; ++k) EXPECT_EQ(arrived[k].load(), n);
  }
}

// A barrier's last arrival on a core queues the others to be checked when
// their turn comes (Worker::notify_each); a message that wakes one of them
// before that turn queues it again. Each must be resumed once: after every
// barrier, each process trades a message with the other process of its core
// (round robin: ranks r and r + 2), which is parked there or not yet resumed;
// every process counts its passes.
TEST(CollectivesSeries, AProcessReleasedByABarrierAndWokenBeforeItsTurnResumesOnce) {
  const Rank n = 4;
  constexpr int kRounds = 50;
  std::vector<int> passes(n, 0);
  Runtime rt;
  rt.run(n, [&](Process& p) -> Task<void> {
    const Rank me = p.rank(), mate = (me + 2) % n;
    for (int k = 0; k < kRounds; ++k) {
      if (me >= 2) co_await p.yield();  // ranks 2 and 3 arrive last on their cores
      co_await p.barrier();
      ++passes[me];
      co_await sytest::trade_messages(p, mate, k, 3);
    }
  });
  EXPECT_EQ(passes, std::vector<int>(n, kRounds));
}

// A barrier's last arrival on a core, where the other core has not reached
// it yet and nothing else of its core could run, looks for it itself
// (Worker::wait_alone) before it parks, and stops looking as soon as a
// packet comes, which its core's worker must take in. Here the other core
// reaches the barrier only once such a packet is taken in: rank 1 (core 0,
// block placement) posts a receive from rank 3 and goes to the barrier,
// where rank 0 is; rank 3 (core 1) ssends to rank 1, which completes only
// once the receive has taken the message, and only then goes to the
// barrier. A look that did not stop for the packet, nor at its bound, would
// wait forever. Every payload is checked.
TEST(CollectivesSeries, ABarrierWaitingForAnotherCoreLetsItsWorkerTakeInAPacket) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  constexpr int kRounds = 200;
  constexpr Tag kTag = 5;
  int received = 0;
  RunOptions block;
  block.placement = Placement::block();
  rt.run(
      4,
      [&](Process& p) -> Task<void> {
        for (int k = 0; k < kRounds; ++k) {
          const std::uint64_t sent = 1000 + static_cast<std::uint64_t>(k);
          if (p.rank() == 1) {
            std::uint64_t got = 0;
            RecvTicket t = p.post_recv_into(3, std::as_writable_bytes(std::span(&got, 1)), kTag);
            co_await p.barrier();
            co_await p.wait(t);
            SY_CHECK(got == sent, "round " << k << ": " << got);
            ++received;
            continue;
          }
          if (p.rank() == 3) co_await p.ssend(1, std::as_bytes(std::span(&sent, 1)), kTag);
          co_await p.barrier();
        }
      },
      block);
  EXPECT_EQ(received, kRounds);
}

// The three forms a barrier takes (BarrierCall): frameless on the world and
// on a split communicator, kept as a Task before it is awaited, and the
// collective's own Task when the job records a trace. Each round counts the
// arrivals of the barrier's members before it and checks them after it.
TEST(CollectivesSeries, BarrierOnSplitCommunicatorsKeptAsATaskAndTraced) {
  Runtime rt;
  for (const bool traced : {false, true}) {
    const Rank n = 37;  // halves of 19 and 18: cores with members of both
    const int rounds = 30;
    std::vector<std::atomic<std::uint64_t>> world_arrived(rounds), half_arrived(2 * rounds);
    std::atomic<std::uint64_t> early{0};
    TraceLog log;
    RunOptions options;
    if (traced) options.trace = &log;
    rt.run(
        n,
        [&](Process& p) -> Task<void> {
          const Communicator half = co_await p.world().split(p.rank() % 2, p.rank());
          const std::size_t mine = p.rank() % 2;
          const std::uint64_t half_size = mine == 0 ? (n + 1) / 2 : n / 2;
          for (int k = 0; k < rounds; ++k) {
            for (Rank y = 0; y < (p.rank() * 5 + k) % 3; ++y) co_await p.yield();
            half_arrived[2 * k + mine].fetch_add(1, std::memory_order_relaxed);
            co_await half.barrier();
            if (half_arrived[2 * k + mine].load(std::memory_order_relaxed) != half_size) early.fetch_add(1);
            Task<void> kept = p.barrier();  // made before the arrival it waits for
            world_arrived[k].fetch_add(1, std::memory_order_relaxed);
            co_await kept;
            if (world_arrived[k].load(std::memory_order_relaxed) != n) early.fetch_add(1);
          }
        },
        options);
    EXPECT_EQ(early.load(), 0u) << "traced " << traced;
    if (traced) {
      std::ostringstream out;
      log.write(out);
      EXPECT_NE(out.str().find("\"barrier\""), std::string::npos) << "a traced barrier records its span";
    }
  }
}

TEST(CollectivesSeries, InterleavedWithPointToPoint) {
  // Each round: post a ring message, run a collective, receive the ring message
  // (by source or from any source), plus a single-copy message two steps away.
  Runtime rt;
  for (std::uint64_t n : {2u, 3u, 32u, 512u}) {
    const Rank N = static_cast<Rank>(n);
    std::mt19937_64 rng(n + 5);
    const int rounds = n >= 512 ? 20 : 60;
    std::vector<Step> steps;
    for (int i = 0; i < rounds; ++i) steps.push_back(make_step(static_cast<Kind>(rng() % kKinds), i, N, rng));
    std::atomic<std::uint64_t> ok{0};
    rt.run(n, [&](Process& p) -> Task<void> {
      const Rank r = p.rank();
      const Rank next = (r + 1) % N, prev = (r + N - 1) % N;
      const Rank far = (r + 2) % N, far_prev = (r + 2 * N - 2) % N;
      for (int i = 0; i < rounds; ++i) {
        const auto small = pattern(i % 40, sytest::message_key(r, next, i));
        const auto big = pattern(3000 + i, sytest::message_key(r, far, i, 1));
        SendTicket t1 = p.post_send(next, small);
        SendTicket t2 = p.post_send(far, big, 1);
        co_await do_step(p, steps[i]);
        Message m = co_await p.recv(i % 2 ? kAnySource : prev);
        // With n <= 2 both neighbours coincide; any-source still only sees tag-0 user messages.
        SY_CHECK(m.source() == prev, "rank " << r << " round " << i << ": message from " << m.source());
        SY_CHECK(m.bytes().size() == static_cast<std::size_t>(i % 40) &&
                     sytest::first_mismatch(m.bytes(), sytest::message_key(prev, r, i)) == std::string::npos,
                 "ring payload, round " << i);
        Message b = co_await p.recv(far_prev, 1);
        SY_CHECK(b.bytes().size() == static_cast<std::size_t>(3000 + i) &&
                     sytest::first_mismatch(b.bytes(), sytest::message_key(far_prev, r, i, 1)) == std::string::npos,
                 "far payload, round " << i);
        co_await p.wait(t1);
        co_await p.wait(t2);
      }
      ok.fetch_add(1);
    });
    EXPECT_EQ(ok.load(), n);
  }
}

TEST(CollectivesErrors, MismatchedAllreduceLengths) {
  Runtime rt;
  for (std::uint64_t n : {2u, 3u, 32u, 1024u}) {
    for (Rank odd : {Rank{0}, Rank{1}, static_cast<Rank>(n - 1)}) {
      EXPECT_THROW(rt.run(n,
                          [&](Process& p) -> Task<void> {
                            std::vector<std::int64_t> v(p.rank() == odd ? 3 : 4, 1);
                            (void)co_await p.allreduce(v);
                          }),
                   InvalidArgument)
          << "n=" << n << " odd rank " << odd;
    }
  }
}

TEST(CollectivesErrors, MismatchedScanLengths) {
  Runtime rt;
  for (std::uint64_t n : {2u, 3u, 32u, 1024u}) {
    EXPECT_THROW(rt.run(n,
                        [&](Process& p) -> Task<void> {
                          std::vector<std::int64_t> v(p.rank() == n / 2 ? 1 : 2, 1);
                          (void)co_await p.exclusive_scan(v);
                        }),
                 InvalidArgument)
        << "n=" << n;
  }
}

TEST(CollectivesErrors, BadRootAndMismatchedKinds) {
  Runtime rt;
  EXPECT_THROW(rt.run(4,
                      [&](Process& p) -> Task<void> {
                        std::byte b{};
                        (void)co_await p.broadcast(4, std::span(&b, 1));
                      }),
               InvalidArgument);
  // On one core, different collectives at the same position are detected.
  RunOptions one_core;
  one_core.placement = Placement::explicit_map(std::vector<int>(4, rt.cores()[0]));
  EXPECT_THROW(rt.run(
                   4,
                   [&](Process& p) -> Task<void> {
                     if (p.rank() == 0) {
                       co_await p.barrier();
                     } else {
                       std::int64_t one = 1;
                       (void)co_await p.allreduce(std::span(&one, 1));
                     }
                   },
                   one_core),
               InvalidArgument);
  // Across cores too, and the error names both collectives (it said "vectors
  // of 0 and 1 elements on different cores"). Round robin: even ranks on the
  // first core, odd on the second.
  if (rt.cores().size() >= 2) {
    try {
      rt.run(8, [&](Process& p) -> Task<void> {
        if (p.rank() % 2 == 0) {
          co_await p.barrier();
        } else {
          std::int64_t one = 1;
          (void)co_await p.allreduce(std::span(&one, 1));
        }
      });
      ADD_FAILURE() << "a barrier paired with an allreduce was accepted";
    } catch (const InvalidArgument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("barrier"), std::string::npos) << what;
      EXPECT_NE(what.find("allreduce"), std::string::npos) << what;
    }
  }
  // And the runtime still works.
  std::atomic<int> ok{0};
  rt.run(8, [&](Process& p) -> Task<void> {
    std::int64_t one = 1;
    auto s = co_await p.allreduce(std::span(&one, 1));
    if (s.size() == 1 && s[0] == 8) ok.fetch_add(1);
  });
  EXPECT_EQ(ok.load(), 8);
}

// Members naming different roots for one broadcast: refused, on one core
// (ranks 0-3 say root 0, 4-7 root 1) and across cores (the even ranks of the
// first core say 0, the odd ones 1), where before 4 ranks got root 0's bytes
// and 4 root 1's.
TEST(CollectivesErrors, BroadcastRootsMustAgree) {
  Runtime rt;
  for (bool across_cores : {false, true}) {
    if (across_cores && rt.cores().size() < 2) continue;
    try {
      rt.run(8, [&](Process& p) -> Task<void> {
        const Rank root = across_cores ? p.rank() % 2 : p.rank() / 4;
        const std::byte b = static_cast<std::byte>(p.rank());
        (void)co_await p.broadcast(root, std::span(&b, 1));
      });
      ADD_FAILURE() << "broadcasts from roots 0 and 1 were accepted (" << (across_cores ? "across cores" : "one core")
                    << ")";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("root"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
