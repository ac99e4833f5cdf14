// Compiled exchanges on the runtime alone (compiled_exchange.hpp): a ring of
// messages in pieces, pulled and pushed, in every order, every byte checked;
// busy locks that let one copier at a time into a receiver; the arguments
// refused; and a run that completes only once the other cores have copied.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <switchyard/compiled_exchange.hpp>
#include <switchyard/runtime.hpp>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace switchyard;

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

std::byte payload(Rank src, Rank dst, std::size_t at) {
  return static_cast<std::byte>((src * 131 + dst * 7 + at * 13) & 0xff);
}

// Each member's part from its steps both ways, by member (the steps outlive the parts).
std::vector<CompiledMember> members_of(const std::vector<std::vector<CopyStep>>& incoming,
                                       const std::vector<std::vector<CopyStep>>& outgoing) {
  std::vector<CompiledMember> members(incoming.size());
  for (std::size_t r = 0; r < members.size(); ++r) members[r] = CompiledMember{incoming[r], outgoing[r]};
  return members;
}

// Consecutive ranks together on a core: pairs of members on one core, or across two.
RunOptions block_placement() {
  RunOptions block;
  block.placement = Placement::block();
  return block;
}

// Member r sends `bytes` bytes to r+1 and r+2 (mod n), each message in two
// pieces of different phases; steps are built by every member alike.
struct Ring {
  Rank n;
  std::uint64_t bytes;
  std::vector<std::vector<CopyStep>> incoming, outgoing;  // by member
  std::vector<CompiledMember> members;

  Ring(Rank n, std::uint64_t bytes) : n(n), bytes(bytes), incoming(n), outgoing(n), members(n) {
    for (Rank src = 0; src < n; ++src) {
      for (std::uint32_t k = 0; k < 2; ++k) {
        const Rank dst = (src + 1 + k) % n;
        const std::uint32_t dst_region = k;  // from src-1 (k = 0) into region 0, from src-2 into region 1
        const std::uint64_t half = bytes / 2;
        for (std::uint32_t piece = 0; piece < 2; ++piece) {
          const std::uint64_t at = piece == 0 ? 0 : half;
          const CopyStep st{src, dst, k, dst_region, at, at, piece == 0 ? half : bytes - half, piece + k};
          outgoing[src].push_back(st);
          incoming[dst].push_back(st);
        }
      }
    }
    // Each member's steps in phase order, as a schedule gives them.
    auto by_phase = [](const CopyStep& a, const CopyStep& b) { return a.phase < b.phase; };
    for (Rank r = 0; r < n; ++r) {
      std::stable_sort(incoming[r].begin(), incoming[r].end(), by_phase);
      std::stable_sort(outgoing[r].begin(), outgoing[r].end(), by_phase);
      members[r] = CompiledMember{incoming[r], outgoing[r]};
    }
  }
};

// Every member runs the ring `runs` times with fresh payloads, checks every
// byte, and (receiver_locks) counts its inquiries. With `move_regions`, each
// member has two sets of buffers and switches between them every 4 runs, on
// a rhythm of its core's: in each run the members of one core alone move their
// sends, or its even members their receives. A copy made at the addresses of
// an earlier run reads stale payloads or leaves a receive unfilled.
void run_ring(Rank n, std::uint64_t bytes, CompiledExchangeOptions options, int runs,
              BusyLockObserver* observer = nullptr, bool move_regions = false) {
  const Ring ring(n, bytes);
  options.phases = 3;
  options.observer = observer;
  runtime().run(n, [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    std::vector<std::byte> outs[2] = {std::vector<std::byte>(2 * bytes), std::vector<std::byte>(2 * bytes)};
    std::vector<std::byte> ins[2] = {std::vector<std::byte>(2 * bytes), std::vector<std::byte>(2 * bytes)};
    for (int k = 0; k < runs; ++k) {
      const int rhythm = k + 2 * static_cast<int>(p.core() % 2);
      std::vector<std::byte>& out = outs[move_regions ? (rhythm + 1) / 4 % 2 : 0];
      std::vector<std::byte>& in = ins[move_regions && me % 2 == 0 ? (rhythm + 2) / 4 % 2 : 0];
      const std::span<const std::byte> send[] = {{out.data(), bytes}, {out.data() + bytes, bytes}};
      const std::span<std::byte> recv[] = {{in.data(), bytes}, {in.data() + bytes, bytes}};
      for (std::size_t at = 0; at < bytes; ++at) {
        out[at] = payload(me, (me + 1) % n, at + k);
        out[bytes + at] = payload(me, (me + 2) % n, at + k);
      }
      std::fill(in.begin(), in.end(), std::byte{0xee});
      const CompiledRunStats stats =
          co_await run_compiled_exchange(p, 42, n, ring.members[me], CompiledRegions{send, recv}, options);
      const std::uint64_t pieces = bytes / 2 > 0 ? 4 : 2;  // an empty piece is not copied
      if (options.order == CopyOrder::receiver_locks) SY_CHECK(stats.busy_lock_inquiries >= pieces, "inquiries");
      for (std::size_t at = 0; at < bytes; ++at) {
        SY_CHECK(in[at] == payload((me + n - 1) % n, me, at + k), "run " << k << ", byte " << at << " from rank-1");
        SY_CHECK(in[bytes + at] == payload((me + n - 2) % n, me, at + k),
                 "run " << k << ", byte " << at << " from rank-2");
      }
    }
  });
}

struct Variant {
  std::string name;
  CopySide side;
  CopyOrder order;
};

class CompiledRing : public ::testing::TestWithParam<Variant> {};

TEST_P(CompiledRing, EveryByteOfEveryRun) {
  CompiledExchangeOptions options;
  options.side = GetParam().side;
  options.order = GetParam().order;
  for (Rank n : {Rank{1}, Rank{2}, Rank{3}, Rank{7}, Rank{64}}) {
    for (std::uint64_t bytes : {std::uint64_t{1}, std::uint64_t{16}, std::uint64_t{5000}}) {
      SCOPED_TRACE(std::to_string(n) + " members, " + std::to_string(bytes) + " bytes");
      run_ring(n, bytes, options, 20);
    }
  }
}

// A core copies each step at the addresses it found in the last run, for as
// long as no participant at either end has moved its regions since.
TEST_P(CompiledRing, RegionsThatMoveBetweenRuns) {
  CompiledExchangeOptions options;
  options.side = GetParam().side;
  options.order = GetParam().order;
  for (Rank n : {Rank{2}, Rank{3}, Rank{7}, Rank{64}}) {
    for (std::uint64_t bytes : {std::uint64_t{16}, std::uint64_t{5000}}) {
      SCOPED_TRACE(std::to_string(n) + " members, " + std::to_string(bytes) + " bytes");
      run_ring(n, bytes, options, 24, nullptr, true);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Orders, CompiledRing,
                         ::testing::Values(Variant{"pull_any", CopySide::receiver, CopyOrder::any},
                                           Variant{"push_any", CopySide::sender, CopyOrder::any},
                                           Variant{"pull_phases", CopySide::receiver, CopyOrder::phases},
                                           Variant{"push_phases", CopySide::sender, CopyOrder::phases},
                                           Variant{"pull_strict", CopySide::receiver, CopyOrder::strict_phases},
                                           Variant{"push_strict", CopySide::sender, CopyOrder::strict_phases},
                                           Variant{"receiver_locks", CopySide::sender, CopyOrder::receiver_locks}),
                         [](const auto& info) { return info.param.name; });

// Member s sends to s, s-1 and s-2 (mod n) strided messages whose pieces
// interleave: slot k of each period of 3 pieces, on both sides, goes to
// s-k, so each member receives slot k from s+k. Slot k's message has k
// fewer pieces than the periods (its last k periods' slot stays as it was),
// and each member also sends s+1 a contiguous tail in region 1. Pulled in
// phase order, each receiver's strided steps run in rounds.
struct Interleaved {
  Rank n;
  std::uint64_t piece, periods, tail = 40;
  std::vector<std::vector<CopyStep>> incoming, outgoing;
  std::vector<CompiledMember> members;

  Interleaved(Rank n, std::uint64_t piece, std::uint64_t periods)
      : n(n), piece(piece), periods(periods), incoming(n), outgoing(n), members(n) {
    for (Rank src = 0; src < n; ++src) {
      for (std::uint32_t k = 0; k < 3; ++k) {
        const Rank dst = (src + n * 3 - k) % n;
        const auto pieces = static_cast<std::uint32_t>(periods - k);
        const CopyStep st{src, dst, 0, 0, k * piece, k * piece, piece, k, pieces, 3 * piece, 3 * piece};
        outgoing[src].push_back(st);
        incoming[st.dst].push_back(st);
      }
      const CopyStep tail_step{src, (src + 1) % n, 1, 1, 0, 0, tail, 0};
      outgoing[src].push_back(tail_step);
      incoming[tail_step.dst].push_back(tail_step);
    }
    auto by_phase = [](const CopyStep& a, const CopyStep& b) { return a.phase < b.phase; };
    for (Rank r = 0; r < n; ++r) {
      std::stable_sort(incoming[r].begin(), incoming[r].end(), by_phase);
      std::stable_sort(outgoing[r].begin(), outgoing[r].end(), by_phase);
      members[r] = CompiledMember{incoming[r], outgoing[r]};
    }
  }
  std::uint64_t bytes() const { return 3 * piece * periods; }
  // Receiver r's byte at `at` of region 0 after run k, or 0xee where nothing lands.
  std::byte expected(Rank r, std::uint64_t at, int k) const {
    const std::uint64_t period = at / (3 * piece), slot = at / piece % 3;
    if (period >= periods - slot) return std::byte{0xee};
    return payload((r + slot) % n, 0, at + k);
  }
};

// Every byte of every run, in every order and side: pulled in phase order the
// receivers' strided steps take turns in rounds (pieces of 8, 12 and 16
// bytes: fixed-size moves and not), each step to its own last piece.
TEST(CompiledExchangeRounds, InterleavedStridedMessagesEveryByte) {
  for (const CopyOrder order : {CopyOrder::phases, CopyOrder::any, CopyOrder::strict_phases}) {
    for (const CopySide side : {CopySide::receiver, CopySide::sender}) {
      for (const Rank n : {Rank{1}, Rank{2}, Rank{3}, Rank{7}}) {
        for (const std::uint64_t piece : {std::uint64_t{8}, std::uint64_t{12}, std::uint64_t{16}}) {
          SCOPED_TRACE(std::to_string(n) + " members, pieces of " + std::to_string(piece) + " bytes, order " +
                       std::to_string(static_cast<int>(order)) + ", side " + std::to_string(static_cast<int>(side)));
          const Interleaved plan(n, piece, 2001);
          CompiledExchangeOptions options;
          options.side = side;
          options.order = order;
          options.phases = 3;
          runtime().run(n, [&](Process& p) -> Task<void> {
            const Rank me = p.rank();
            std::vector<std::byte> out(plan.bytes()), in(plan.bytes()), tail_out(plan.tail), tail_in(plan.tail);
            const std::span<const std::byte> send[] = {out, tail_out};
            const std::span<std::byte> recv[] = {in, tail_in};
            for (int k = 0; k < 6; ++k) {
              for (std::size_t at = 0; at < out.size(); ++at) out[at] = payload(me, 0, at + k);
              for (std::size_t at = 0; at < plan.tail; ++at) tail_out[at] = payload(me, 1, at + k);
              std::fill(in.begin(), in.end(), std::byte{0xee});
              std::fill(tail_in.begin(), tail_in.end(), std::byte{0xee});
              co_await run_compiled_exchange(p, 43, n, plan.members[me], CompiledRegions{send, recv}, options);
              for (std::size_t at = 0; at < in.size(); ++at) {
                SY_CHECK(in[at] == plan.expected(me, at, k), "run " << k << ", byte " << at);
              }
              for (std::size_t at = 0; at < plan.tail; ++at) {
                SY_CHECK(tail_in[at] == payload((me + n - 1) % n, 1, at + k), "run " << k << ", tail byte " << at);
              }
            }
          });
        }
      }
    }
  }
}

// Counts the copiers inside each receiver at once.
class InFlight final : public BusyLockObserver {
 public:
  explicit InFlight(Rank n) : inside_(n) {}
  void enter(Rank r) noexcept override {
    const int now = inside_[r].fetch_add(1, std::memory_order_relaxed) + 1;
    int seen = most_.load(std::memory_order_relaxed);
    while (now > seen && !most_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    copies_.fetch_add(1, std::memory_order_relaxed);
  }
  void leave(Rank r) noexcept override { inside_[r].fetch_sub(1, std::memory_order_relaxed); }
  int most() const { return most_.load(); }
  int copies() const { return copies_.load(); }

 private:
  std::vector<std::atomic<int>> inside_;
  std::atomic<int> most_{0}, copies_{0};
};

TEST(CompiledExchangeBusyLocks, OneCopierAtATimeIntoEachReceiver) {
  InFlight seen(32);
  CompiledExchangeOptions options;
  options.side = CopySide::sender;
  options.order = CopyOrder::receiver_locks;
  run_ring(32, 64 * 1024, options, 30, &seen);
  EXPECT_EQ(seen.most(), 1);
  EXPECT_EQ(seen.copies(), 32 * 4 * 30);  // every piece of every run, each under its receiver's lock
}

// What reverse_steps was asked: by every sender in every run, with the seed
// and the run's number.
std::atomic<std::uint64_t> order_calls{0}, order_last_run{0};
std::atomic<bool> order_wrong{false};

void reverse_steps(std::uint64_t seed, std::uint64_t run, Rank sender, std::span<std::uint32_t> steps) noexcept {
  if (seed != 7 || run == 0 || sender >= 8 || steps.empty()) order_wrong = true;
  std::reverse(steps.begin(), steps.end());
  order_calls.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t last = order_last_run.load(std::memory_order_relaxed);
  while (run > last && !order_last_run.compare_exchange_weak(last, run, std::memory_order_relaxed)) {
  }
}

// The caller's order of each sender's steps (the mechanism DRS_N's random
// order runs on): asked once per sender and run, and every byte still lands.
TEST(CompiledExchangeBusyLocks, TheStepOrderIsAskedPerSenderAndRun) {
  InFlight seen(8);
  CompiledExchangeOptions options;
  options.side = CopySide::sender;
  options.order = CopyOrder::receiver_locks;
  options.seed = 7;
  options.step_order = &reverse_steps;
  run_ring(8, 4096, options, 5, &seen);
  EXPECT_FALSE(order_wrong.load());
  EXPECT_EQ(order_calls.load(), 8u * 5u);
  EXPECT_EQ(order_last_run.load(), 5u);
  EXPECT_EQ(seen.most(), 1);
}

// Refused with InvalidArgument naming the rank: a member beyond the
// participants, busy locks held by receivers, a step of another member, a
// second run with other options.
TEST(CompiledExchangeErrors, RefusedWithTheRank) {
  const Ring ring(4, 8), three(3, 8);
  auto expect_refusal = [&](auto body, const std::string& words) {
    try {
      runtime().run(4, body);
      ADD_FAILURE() << "no error";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_refusal(
      [&](Process& p) -> Task<void> {
        const CompiledMember& mine = p.rank() < 3 ? three.members[p.rank()] : CompiledMember{};
        std::vector<std::byte> out(16), in(16);
        const std::span<const std::byte> send[] = {{out.data(), 8}, {out.data() + 8, 8}};
        const std::span<std::byte> recv[] = {{in.data(), 8}, {in.data() + 8, 8}};
        co_await run_compiled_exchange(p, 1, 3, mine, CompiledRegions{send, recv}, CompiledExchangeOptions{});
      },
      "rank 3: not one of the exchange's 3 participants");
  expect_refusal(
      [&](Process& p) -> Task<void> {
        CompiledExchangeOptions o;
        o.order = CopyOrder::receiver_locks;
        co_await run_compiled_exchange(p, 1, 4, ring.members[p.rank()], CompiledRegions{}, o);
      },
      "receiver_locks needs CopySide::sender");
  expect_refusal(
      [&](Process& p) -> Task<void> {
        co_await run_compiled_exchange(p, 1, 4, ring.members[(p.rank() + 1) % 4], CompiledRegions{},
                                       CompiledExchangeOptions{});
      },
      "a step of another member");
  expect_refusal(
      [&](Process& p) -> Task<void> {
        std::vector<std::byte> out(16), in(16);
        const std::span<const std::byte> send[] = {{out.data(), 8}, {out.data() + 8, 8}};
        const std::span<std::byte> recv[] = {{in.data(), 8}, {in.data() + 8, 8}};
        CompiledExchangeOptions o;
        co_await run_compiled_exchange(p, 1, 4, ring.members[p.rank()], CompiledRegions{send, recv}, o);
        o.side = CopySide::sender;
        co_await run_compiled_exchange(p, 1, 4, ring.members[p.rank()], CompiledRegions{send, recv}, o);
      },
      "was first run with other options");
}

// A member's run returns only once every core that reads its buffers has
// copied: its sender overwrites its buffer right after the run, and the
// receivers, which check after a barrier, still see the run's bytes.
TEST(CompiledExchange, ASendBufferIsFreeWhenTheRunReturns) {
  const Rank n = 16;
  const Ring ring(n, 4096);
  runtime().run(n, [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    std::vector<std::byte> out(2 * 4096, std::byte{static_cast<unsigned char>(me)}), in(2 * 4096);
    const std::span<const std::byte> send[] = {{out.data(), 4096}, {out.data() + 4096, 4096}};
    const std::span<std::byte> recv[] = {{in.data(), 4096}, {in.data() + 4096, 4096}};
    for (int k = 0; k < 50; ++k) {
      co_await run_compiled_exchange(p, 7, n, ring.members[me], CompiledRegions{send, recv}, CompiledExchangeOptions{});
      std::fill(out.begin(), out.end(), std::byte{0xff});  // nobody reads it any more
      co_await p.barrier();
      const auto from1 = static_cast<unsigned char>((me + n - 1) % n),
                 from2 = static_cast<unsigned char>((me + n - 2) % n);
      SY_CHECK(std::all_of(in.begin(), in.begin() + 4096, [&](std::byte b) { return b == std::byte{from1}; }) &&
                   std::all_of(in.begin() + 4096, in.end(), [&](std::byte b) { return b == std::byte{from2}; }),
               "run " << k << ": a copy read a send buffer after its run returned");
      std::fill(out.begin(), out.end(), std::byte{static_cast<unsigned char>(me)});
      co_await p.barrier();
    }
  });
}

// A core's copier wakes its participants last-come first (their data most
// recently touched, so likelier in the cache): on each core, the runs return
// in the reverse of the order in which they arrived, the copier (the last to
// arrive) first; so the next run arrives in the reverse of this one's order.
TEST(CompiledExchange, ParticipantsReturnInTheReverseOfTheirArrival) {
  const Rank n = 8;
  const Ring ring(n, 64);
  constexpr int kRuns = 4;
  struct Orders {
    std::vector<Rank> arrived, returned;
  };
  const std::vector<int>& cores = runtime().cores();  // by OS CPU number: made before the job, written by one core each
  std::vector<std::vector<Orders>> by_core(*std::max_element(cores.begin(), cores.end()) + 1,
                                           std::vector<Orders>(kRuns));
  runtime().run(n, [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    std::vector<std::byte> out(2 * 64, std::byte{1}), in(2 * 64);
    const std::span<const std::byte> send[] = {{out.data(), 64}, {out.data() + 64, 64}};
    const std::span<std::byte> recv[] = {{in.data(), 64}, {in.data() + 64, 64}};
    for (int k = 0; k < kRuns; ++k) {
      Orders& orders = by_core[p.core()][k];  // one core's processes run on its one thread
      orders.arrived.push_back(me);
      co_await run_compiled_exchange(p, 9, n, ring.members[me], CompiledRegions{send, recv}, CompiledExchangeOptions{});
      orders.returned.push_back(me);
    }
  });
  for (std::size_t core = 0; core < by_core.size(); ++core) {
    for (int k = 0; k < kRuns; ++k) {
      const Orders& o = by_core[core][k];
      EXPECT_TRUE(std::equal(o.arrived.rbegin(), o.arrived.rend(), o.returned.begin(), o.returned.end()))
          << "core " << core << ", run " << k;
      if (k > 0) {
        EXPECT_EQ(o.arrived, by_core[core][k - 1].returned) << "core " << core << ", run " << k;
      }
    }
  }
}

// Small messages from one core's members to another's go through the
// sending core's staging area: a few (up to 4 KiB a run), or many of less
// than a cache line each (up to 64 KiB a run: packed, they cross in whole
// lines). The senders' runs end without waiting for the receivers' copies, so
// a sender may run ahead of a slow receiver, by two runs at most (the area
// has a half per run parity, written again only once the receiver's core has
// unpacked it). Ranks 0 and 1 (core 0) send to 2 and 3 (core 1), which
// compute after each run; every byte of every run is checked. Three shapes
// of pieces: all of 8 bytes, all of 16 (each copied with its size fixed), and
// of 8 and 12 bytes with a strided step among them; 3 and 400 pieces a sender.
TEST(CompiledExchange, SmallMessagesToAnotherCoreLetTheSendersRunAheadByTwoRunsAtMost) {
  if (runtime().cores().size() < 2) GTEST_SKIP() << "needs two cores";
  const Rank n = 4;
  for (const auto& [piece_bytes, pieces] :
       {std::pair<std::uint64_t, std::uint64_t>{8, 3}, {16, 3}, {0, 3}, {8, 400}, {16, 400}, {0, 400}}) {
    SCOPED_TRACE(std::to_string(pieces) + " pieces of " +
                 (piece_bytes ? std::to_string(piece_bytes) + " bytes" : std::string("mixed sizes")));
    std::vector<std::vector<CopyStep>> incoming(n), outgoing(n);
    for (Rank src = 0; src < 2; ++src) {
      for (std::uint64_t piece = 0; piece < pieces; ++piece) {  // 8 bytes apart in the sender, 16 in the receiver
        CopyStep st{src, src + 2, 0, 0, piece * 8, piece * 16, piece_bytes ? piece_bytes : 8 + src * 4};
        if (!piece_bytes && src == 1 &&
            piece == 2) {  // two pieces of 4 bytes, 8 apart at both ends, in piece 2's place
          st = CopyStep{src, src + 2, 0, 0, 16, 32, 4, 0, 2, 8, 8};
        }
        outgoing[src].push_back(st);
        incoming[src + 2].push_back(st);
      }
    }
    const std::vector<CompiledMember> members = members_of(incoming, outgoing);
    constexpr int kRuns = 300;
    std::atomic<int> sent[2] = {0, 0};
    std::atomic<int> most_ahead{0};
    runtime().run(
        n,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          SY_CHECK(p.core_index() == me / 2, "block placement: ranks 0 and 1 on one core, 2 and 3 on the other");
          std::vector<std::byte> out(pieces * 8 + 16), in(std::max<std::uint64_t>(64, pieces * 16));
          const std::span<const std::byte> send[] = {out};
          const std::span<std::byte> recv[] = {in};
          for (int k = 0; k < kRuns; ++k) {
            for (std::size_t at = 0; at < out.size(); ++at) out[at] = payload(me, me + 2, at + k);
            std::fill(in.begin(), in.end(), std::byte{0xee});
            co_await run_compiled_exchange(p, 11, n, members[me], CompiledRegions{send, recv},
                                           CompiledExchangeOptions{});
            if (me < 2) {
              sent[me].store(k + 1, std::memory_order_relaxed);
              continue;
            }
            const Rank from = me - 2;
            for (const CopyStep& st : incoming[me]) {
              for (std::uint64_t c = 0; c < st.count; ++c) {
                for (std::uint64_t at = 0; at < st.bytes; ++at) {
                  const std::uint64_t to = st.dst_offset + c * st.dst_stride + at;
                  SY_CHECK(in[to] == payload(from, me, st.src_offset + c * st.src_stride + at + k),
                           "run " << k << ", byte " << to << " from rank " << from);
                }
              }
            }
            const int ahead = sent[from].load(std::memory_order_relaxed) - (k + 1);
            SY_CHECK(ahead <= 2, "run " << k << ": rank " << from << " is " << ahead << " runs ahead");
            most_ahead.store(std::max(most_ahead.load(std::memory_order_relaxed), ahead), std::memory_order_relaxed);
            const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
            while (std::chrono::steady_clock::now() < until) {
            }
          }
        },
        block_placement());
    EXPECT_GE(most_ahead.load(), 1) << "no sender ran ahead: their runs waited for the receivers' copies";
  }
}

// Small pieces to another core through a staging area whose packing
// compares each piece with what its half held two runs before only while
// most pieces stay as they were (pack_staged): phases of runs in which every
// piece changes (packing stops comparing, then compares again every few
// runs), one piece in seven changes, none changes, and every piece again.
// Every byte of every run is checked: a piece copied or left alone wrongly
// in any phase, or at a phase's turn, shows.
TEST(CompiledExchange, StagedPiecesArriveWhetherTheyChangeEveryRunSomeRunsOrNever) {
  if (runtime().cores().size() < 2) GTEST_SKIP() << "needs two cores";
  const Rank n = 4;
  constexpr std::uint64_t kPieces = 200, kBytes = 16;
  std::vector<std::vector<CopyStep>> incoming(n), outgoing(n);
  for (Rank src = 0; src < 2; ++src) {
    for (std::uint64_t piece = 0; piece < kPieces; ++piece) {  // 16 bytes apart in the sender, 24 in the receiver
      const CopyStep st{src, src + 2, 0, 0, piece * kBytes, piece * (kBytes + 8), kBytes};
      outgoing[src].push_back(st);
      incoming[src + 2].push_back(st);
    }
  }
  const std::vector<CompiledMember> members = members_of(incoming, outgoing);
  // Run k's version of a piece: every piece changes in runs [0, 60) and [200, 260),
  // every seventh in [60, 140), none in [140, 200).
  auto version = [](std::uint64_t piece, int k) -> int {
    if (k < 60 || k >= 200) return k;
    if (k < 140) return piece % 7 == 0 ? k : 59;
    return 139;
  };
  runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        SY_CHECK(p.core_index() == me / 2, "block placement: ranks 0 and 1 on one core, 2 and 3 on the other");
        std::vector<std::byte> out(kPieces * kBytes), in(kPieces * (kBytes + 8));
        const std::span<const std::byte> send[] = {out};
        const std::span<std::byte> recv[] = {in};
        for (int k = 0; k < 260; ++k) {
          for (std::uint64_t piece = 0; piece < kPieces; ++piece) {
            for (std::uint64_t b = 0; b < kBytes; ++b) {
              out[piece * kBytes + b] = payload(me, me + 2, piece * kBytes + b + version(piece, k));
            }
          }
          std::fill(in.begin(), in.end(), std::byte{0xee});
          co_await run_compiled_exchange(p, 19, n, members[me], CompiledRegions{send, recv}, CompiledExchangeOptions{});
          if (me < 2) continue;
          for (std::uint64_t piece = 0; piece < kPieces; ++piece) {
            for (std::uint64_t b = 0; b < kBytes + 8; ++b) {
              const std::byte want =
                  b < kBytes ? payload(me - 2, me, piece * kBytes + b + version(piece, k)) : std::byte{0xee};
              SY_CHECK(in[piece * (kBytes + 8) + b] == want, "run " << k << ", piece " << piece << ", byte " << b);
            }
          }
        }
      },
      block_placement());
}

// Pieces of every size from 1 to `largest` bytes, from rank 0 to rank 1 (its
// core, block placement) and to rank 2 (the other core), each followed in
// the receiver by a guard byte that no copy may touch. Sizes up to 90 bytes
// come to under 4 KiB a run, which the other core takes through the sending
// core's staging area; up to 160 they do not, and it pulls them. Every byte
// of every run is checked. Each run's payload is the one two runs before
// (which a staging area's half holds) with one byte of each piece changed,
// at a place that moves from run to run: a piece left alone because it
// compared equal to its half must have been equal in every byte.
void run_every_piece_size(std::uint64_t largest) {
  const Rank n = 4;
  std::vector<std::vector<CopyStep>> incoming(n), outgoing(n);
  std::uint64_t at = 0;
  for (std::uint64_t bytes = 1; bytes <= largest; ++bytes) {
    for (const Rank dst : {Rank{1}, Rank{2}}) {
      const CopyStep st{0, dst, 0, 0, at, at + bytes - 1, bytes};  // guard byte before each piece but the first
      outgoing[0].push_back(st);
      incoming[dst].push_back(st);
    }
    at += bytes;
  }
  const std::uint64_t total = at + largest;  // room for the guards
  const std::vector<CompiledMember> members = members_of(incoming, outgoing);
  runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        // Run k's payload, which every rank derives alike: by_parity[k % 2] after run k's change.
        std::vector<std::byte> by_parity[2] = {std::vector<std::byte>(total), std::vector<std::byte>(total)};
        for (std::size_t b = 0; b < total; ++b) by_parity[0][b] = by_parity[1][b] = payload(0, 0, b);
        std::vector<std::byte> out(total), in(total);
        const std::span<const std::byte> send[] = {out};
        const std::span<std::byte> recv[] = {in};
        for (int k = 0; k < 24; ++k) {
          std::vector<std::byte>& sent = by_parity[k % 2];
          for (const CopyStep& st : incoming[1]) {
            sent[st.src_offset + (static_cast<std::uint64_t>(k) * 13) % st.bytes] ^= std::byte(k + 1);
          }
          out = sent;
          std::fill(in.begin(), in.end(), std::byte{0xee});
          co_await run_compiled_exchange(p, 13, n, members[me], CompiledRegions{send, recv}, CompiledExchangeOptions{});
          if (incoming[me].empty()) continue;
          std::vector<bool> written(total, false);
          for (const CopyStep& st : incoming[me]) {
            for (std::uint64_t b = 0; b < st.bytes; ++b) {
              SY_CHECK(in[st.dst_offset + b] == sent[st.src_offset + b],
                       "run " << k << ", piece of " << st.bytes << " bytes, byte " << b);
              written[st.dst_offset + b] = true;
            }
          }
          for (std::uint64_t b = 0; b < total; ++b) {
            SY_CHECK(written[b] || in[b] == std::byte{0xee}, "run " << k << ": guard byte " << b << " written");
          }
        }
      },
      block_placement());
}

// Ranks 0 and 2 of 4 send each other `bytes` bytes a run: with block
// placement, one on each core where there are two. Ranks 1 and 3 take part
// with no steps of their own.
struct PairAcrossCores {
  static constexpr Rank n = 4;
  std::uint64_t bytes;
  std::vector<std::vector<CopyStep>> incoming, outgoing;  // by member
  std::vector<CompiledMember> members;

  explicit PairAcrossCores(std::uint64_t bytes) : bytes(bytes), incoming(n), outgoing(n) {
    for (const auto& [src, dst] : {std::pair<Rank, Rank>{0, 2}, std::pair<Rank, Rank>{2, 0}}) {
      const CopyStep st{src, dst, 0, 0, 0, 0, bytes};
      outgoing[src].push_back(st);
      incoming[dst].push_back(st);
    }
    members = members_of(incoming, outgoing);
  }
};

// Member `me`'s buffers in a PairAcrossCores and its regions over them; it
// lives in the member's frame, where the regions' spans point into it.
struct PairBuffers {
  Rank me;
  std::vector<std::byte> out, in;
  std::span<const std::byte> send[1];
  std::span<std::byte> recv[1];
  CompiledRegions regions;

  PairBuffers(const PairAcrossCores& pair, Rank me)
      : me(me),
        out(pair.outgoing[me].empty() ? 0 : pair.bytes),
        in(pair.incoming[me].empty() ? 0 : pair.bytes),
        send{out},
        recv{in},
        regions{out.empty() ? std::span<const std::span<const std::byte>>{} : send,
                in.empty() ? std::span<const std::span<std::byte>>{} : recv} {}
  // Run k's bytes to send, and the receive buffer poisoned.
  void write_run(int k) {
    for (std::size_t at = 0; at < out.size(); ++at) out[at] = payload(me, 2 - me, at + k);
    std::fill(in.begin(), in.end(), std::byte{0xee});
  }
  // Every byte that run k received.
  void check_run(int k) const {
    for (std::size_t at = 0; at < in.size(); ++at) {
      SY_CHECK(in[at] == payload(2 - me, me, at + k), "rank " << me << ", run " << k << ", byte " << at);
    }
  }
};

// A copier that finds everything it copies from published copies at once in
// the awaiting process, but its members' runs end only once the cores that
// copy out of them have copied too. Rank 0 (core 0, block placement) and
// rank 2 (core 1) send each other 8 KiB a run (more than a staging area
// takes: each core pulls from the other's member). Core 0 computes before
// each run, so core 1 publishes first and waits; core 0's copier then finds
// core 1 published, copies at once, and must wait for core 1's copies out of
// rank 0 before rank 0 returns and writes its next run's bytes at once.
// Every byte of every run is checked on both sides.
TEST(CompiledExchange, ACopierThatCopiesAtOnceWaitsForTheCoresThatCopyFromItsMembers) {
  if (runtime().cores().size() < 2) GTEST_SKIP() << "needs two cores";
  const PairAcrossCores pair(8192);
  runtime().run(
      PairAcrossCores::n,
      [&](Process& p) -> Task<void> {
        PairBuffers b(pair, p.rank());
        for (int k = 0; k < 200; ++k) {
          b.write_run(k);
          if (p.core_index() == 0) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
            while (std::chrono::steady_clock::now() < until) {
            }
          }
          co_await run_compiled_exchange(p, 19, PairAcrossCores::n, pair.members[b.me], b.regions,
                                         CompiledExchangeOptions{});
          b.check_run(k);
        }
      },
      block_placement());
}

// A copier that finds another core not yet published, where nothing else of
// its core could run, looks for that core's word itself (Worker::wait_alone)
// before it parks, and stops looking as soon as a packet comes, which its
// core's worker must take in. Rank 0 and rank 2 (cores 0 and 1, block
// placement) exchange 16 bytes a run; rank 1 posts a receive from rank 3
// before each run, and rank 3 ssends to it before its own arrival, which
// completes only once the receive has taken the message: core 1 publishes
// only after core 0's worker took it in. A look that did not stop for the
// packet, nor at its bound, would wait forever. Every byte is checked.
TEST(CompiledExchange, ACopierWaitingForAnotherCoreLetsItsWorkerTakeInAPacket) {
  if (runtime().cores().size() < 2) GTEST_SKIP() << "needs two cores";
  constexpr Tag kTag = 6;
  const PairAcrossCores pair(16);
  int received = 0;
  runtime().run(
      PairAcrossCores::n,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        PairBuffers b(pair, me);
        for (int k = 0; k < 200; ++k) {
          b.write_run(k);
          const std::uint64_t sent = 1000 + static_cast<std::uint64_t>(k);
          std::uint64_t got = 0;
          RecvTicket ticket;
          if (me == 1) ticket = p.post_recv_into(3, std::as_writable_bytes(std::span(&got, 1)), kTag);
          if (me == 3) co_await p.ssend(1, std::as_bytes(std::span(&sent, 1)), kTag);
          co_await run_compiled_exchange(p, 23, PairAcrossCores::n, pair.members[me], b.regions,
                                         CompiledExchangeOptions{});
          b.check_run(k);
          if (me == 1) {
            co_await p.wait(ticket);
            SY_CHECK(got == sent, "run " << k << ": " << got);
            ++received;
          }
        }
      },
      block_placement());
  EXPECT_EQ(received, 200);
}

TEST(CompiledExchange, EveryPieceSizeStagedOrPulledWritesItsBytesAndNoOthers) {
  run_every_piece_size(90);
  run_every_piece_size(160);
}

// A core's own small messages, all of one size (8 or 16 bytes: each copied
// with its size fixed; 4 and 32: by the general small copy), from rank 0 to
// rank 1 and from rank 2 to rank 3 (block placement: each pair on a core of
// its own where there are two), each followed in the receiver by 8 guard
// bytes that no copy may touch. The pieces come from the sender's two send
// regions in turn: a core's compiling merges pieces of one region that
// follow each other into strided steps. From its second run on, a core
// copies them at the addresses its first run found. Every byte of every run
// is checked.
TEST(CompiledExchange, SmallMessagesOfOneSizeWithinACoreWriteTheirBytesAndNoOthers) {
  const Rank n = 4;
  constexpr std::uint64_t kPieces = 24;
  for (const std::uint64_t bytes : {4, 8, 16, 32}) {
    SCOPED_TRACE("pieces of " + std::to_string(bytes) + " bytes");
    std::vector<std::vector<CopyStep>> incoming(n), outgoing(n);
    const std::uint64_t received = kPieces * (bytes + 8);  // the receive region's bytes, guards included
    for (std::uint64_t piece = 0; piece < kPieces; ++piece) {
      for (const Rank src : {Rank{0}, Rank{2}}) {
        const CopyStep st{
            src, src + 1, static_cast<std::uint32_t>(piece % 2), 0, piece / 2 * bytes, piece * (bytes + 8), bytes};
        outgoing[src].push_back(st);
        incoming[src + 1].push_back(st);
      }
    }
    const std::vector<CompiledMember> members = members_of(incoming, outgoing);
    runtime().run(
        n,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          std::vector<std::byte> out[2] = {std::vector<std::byte>(kPieces / 2 * bytes),
                                           std::vector<std::byte>(kPieces / 2 * bytes)};
          std::vector<std::byte> in(received);
          const std::span<const std::byte> send[] = {out[0], out[1]};
          const std::span<std::byte> recv[] = {in};
          for (int k = 0; k < 16; ++k) {
            for (std::size_t region = 0; region < 2; ++region) {
              for (std::size_t at = 0; at < out[region].size(); ++at) {
                out[region][at] = payload(me, me + 1, region * 1000 + at + k);
              }
            }
            std::fill(in.begin(), in.end(), std::byte{0xee});
            co_await run_compiled_exchange(p, 17, n, members[me], CompiledRegions{send, recv},
                                           CompiledExchangeOptions{});
            if (me % 2 == 0) continue;
            std::vector<std::byte> expected(received, std::byte{0xee});
            for (const CopyStep& st : incoming[me]) {
              for (std::uint64_t b = 0; b < bytes; ++b) {
                expected[st.dst_offset + b] = payload(me - 1, me, st.src_region * 1000 + st.src_offset + b + k);
              }
            }
            for (std::uint64_t b = 0; b < received; ++b) {
              SY_CHECK(in[b] == expected[b], "run " << k << ", byte " << b << " of the receive region");
            }
          }
        },
        block_placement());
  }
}

// A run started twice before its wait: InvalidArgument naming the rank, the
// job ends (no hang), and the other cores have stopped copying out of and into
// the buffers that the refusal unwinds (ASan: no use after free). The first
// run of each job makes the starts publish at once. Then a job's runs, every
// byte checked.
TEST(CompiledExchange, ASecondStartIsRefusedAndTheJobEndsCleanly) {
  const Rank n = 4;
  const std::uint64_t bytes = 1 << 16;
  const Ring ring(n, bytes);
  for (int round = 0; round < 3; ++round) {
    std::string error = "(accepted)";
    try {
      runtime().run(n, [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        std::vector<std::byte> out(2 * bytes, std::byte{1}), in(2 * bytes);
        const std::span<const std::byte> send[] = {{out.data(), bytes}, {out.data() + bytes, bytes}};
        const std::span<std::byte> recv[] = {{in.data(), bytes}, {in.data() + bytes, bytes}};
        co_await run_compiled_exchange(p, 11, n, ring.members[me], CompiledRegions{send, recv}, {});
        CompiledRun run = run_compiled_exchange(p, 11, n, ring.members[me], CompiledRegions{send, recv}, {});
        run.start();
        if (me == 2) run.start();
        co_await run;
      });
    } catch (const InvalidArgument& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("rank 2: start of a run started already"), std::string::npos) << error;
  }
  run_ring(n, bytes, {}, 5);
}

// A run awaited where it is made parks a waiting participant in the
// caller's own coroutine until its core's copier has finished: a message
// that reaches the parked one meanwhile (which notifies it) does not end its
// wait. On each core the other participant sends it a message, then sleeps
// before it arrives itself, last, as the copier: a waiter woken by the
// message would return before the copies and find its receives unfilled.
TEST(CompiledExchange, AParkedParticipantWaitsForItsCoresCopierThroughOtherEvents) {
  const Rank n = 4;  // round robin: ranks 0 and 2 on one core, 1 and 3 on the other
  const Ring ring(n, 64);
  runtime().run(n, [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    std::vector<std::byte> out(2 * 64), in(2 * 64);
    const std::span<const std::byte> send[] = {{out.data(), 64}, {out.data() + 64, 64}};
    const std::span<std::byte> recv[] = {{in.data(), 64}, {in.data() + 64, 64}};
    for (int k = 0; k < 6; ++k) {
      for (std::size_t at = 0; at < 64; ++at) {
        out[at] = payload(me, (me + 1) % n, at + k);
        out[64 + at] = payload(me, (me + 2) % n, at + k);
      }
      std::fill(in.begin(), in.end(), std::byte{0xee});
      co_await p.barrier();
      const bool waiter = me < 2;
      if (!waiter) {
        const std::uint64_t word = k;
        co_await p.send(me - 2, std::as_bytes(std::span(&word, 1)), 5);
        co_await p.sleep_for(std::chrono::milliseconds(5));
      }
      co_await run_compiled_exchange(p, 9, n, ring.members[me], CompiledRegions{send, recv}, CompiledExchangeOptions{});
      for (std::size_t at = 0; at < 64; ++at) {
        SY_CHECK(in[at] == payload((me + n - 1) % n, me, at + k), "run " << k << ", byte " << at << " from rank-1");
        SY_CHECK(in[64 + at] == payload((me + n - 2) % n, me, at + k),
                 "run " << k << ", byte " << at << " from rank-2");
      }
      if (waiter) {
        const Message m = co_await p.recv(me + 2, 5);
        SY_CHECK(m.size() == sizeof(std::uint64_t), "the message's size");
      }
    }
  });
}

// A run's copier queues the participants parked on its core to be checked
// when their turn comes (Worker::notify_each); a message that wakes one of
// them before that turn queues it again. Each must return once from each
// run: after every run each process checks every byte of the run and trades
// a message with the other process of its core (round robin: ranks r and
// r + 2), which is parked in the run or not yet resumed.
TEST(CompiledExchange, AParticipantReleasedAndWokenBeforeItsTurnReturnsOnce) {
  const Rank n = 4;
  const Ring ring(n, 64);
  constexpr int kRuns = 50;
  std::vector<int> returns(n, 0);
  runtime().run(n, [&](Process& p) -> Task<void> {
    const Rank me = p.rank(), mate = (me + 2) % n;
    std::vector<std::byte> out(2 * 64), in(2 * 64);
    const std::span<const std::byte> send[] = {{out.data(), 64}, {out.data() + 64, 64}};
    const std::span<std::byte> recv[] = {{in.data(), 64}, {in.data() + 64, 64}};
    for (int k = 0; k < kRuns; ++k) {
      for (std::size_t at = 0; at < 64; ++at) {
        out[at] = payload(me, (me + 1) % n, at + k);
        out[64 + at] = payload(me, (me + 2) % n, at + k);
      }
      co_await run_compiled_exchange(p, 9, n, ring.members[me], CompiledRegions{send, recv}, CompiledExchangeOptions{});
      ++returns[me];
      for (std::size_t at = 0; at < 64; ++at) {
        SY_CHECK(in[at] == payload((me + n - 1) % n, me, at + k), "run " << k << ", byte " << at << " from rank-1");
        SY_CHECK(in[64 + at] == payload((me + n - 2) % n, me, at + k),
                 "run " << k << ", byte " << at << " from rank-2");
      }
      co_await sytest::trade_messages(p, mate, k, 3);
    }
  });
  EXPECT_EQ(returns, std::vector<int>(n, kRuns));
}

// A stall while participants are parked in a run (which has no frame of its
// own: Process::suspend_in) names the run as the call each one is in: rank 2
// never runs the exchange (it waits for a message that never comes), so rank
// 0, parked on its core with rank 2, waits in the run for its core's copies.
TEST(CompiledExchange, AStallNamesTheRunThatAParkedParticipantIsIn) {
  const Rank n = 4;  // round robin: ranks 0 and 2 on one core (or all four on one)
  const Ring ring(n, 16);
  RunOptions opts;
  opts.stall_timeout = std::chrono::milliseconds(200);
  std::string what;
  try {
    runtime().run(
        n,
        [&](Process& p) -> Task<void> {
          std::vector<std::byte> out(2 * 16), in(2 * 16);
          const std::span<const std::byte> send[] = {{out.data(), 16}, {out.data() + 16, 16}};
          const std::span<std::byte> recv[] = {{in.data(), 16}, {in.data() + 16, 16}};
          if (p.rank() == 2) {
            (void)co_await p.recv(3, 8);
          } else {
            co_await run_compiled_exchange(p, 5, n, ring.members[p.rank()], CompiledRegions{send, recv}, {});
          }
        },
        opts);
    ADD_FAILURE() << "no StallError";
  } catch (const StallError& e) {
    what = e.what();
  }
  const std::size_t at = what.find("rank 0 (core ");
  ASSERT_NE(at, std::string::npos) << what;
  const std::string line = what.substr(at, what.find('\n', at) - at);
  EXPECT_NE(line.find("waits in a compiled exchange run on communicator "), std::string::npos) << what;
  EXPECT_NE(line.find("for the copies of its compiled exchange"), std::string::npos) << what;
  EXPECT_NE(what.find("a message (recv) from rank 3"), std::string::npos) << what;
}

// A run kept as a Task (CompiledRun converts to one) and awaited later copies
// every byte as one awaited at once does; and a participant parked in a run
// when the job fails unwinds with the job (the job's error, no hang).
TEST(CompiledExchange, KeptAsATaskAndParkedWhenTheJobFails) {
  const Rank n = 4;
  const Ring ring(n, 16);
  runtime().run(n, [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    std::vector<std::byte> out(2 * 16), in(2 * 16, std::byte{0xee});
    for (std::size_t at = 0; at < 16; ++at) {
      out[at] = payload(me, (me + 1) % n, at);
      out[16 + at] = payload(me, (me + 2) % n, at);
    }
    const std::span<const std::byte> send[] = {{out.data(), 16}, {out.data() + 16, 16}};
    const std::span<std::byte> recv[] = {{in.data(), 16}, {in.data() + 16, 16}};
    Task<CompiledRunStats> kept = run_compiled_exchange(p, 3, n, ring.members[me], CompiledRegions{send, recv}, {});
    co_await p.barrier();
    co_await kept;
    for (std::size_t at = 0; at < 16; ++at) {
      SY_CHECK(in[at] == payload((me + n - 1) % n, me, at), "byte " << at << " from rank-1");
      SY_CHECK(in[16 + at] == payload((me + n - 2) % n, me, at), "byte " << at << " from rank-2");
    }
  });
  try {
    runtime().run(n, [&](Process& p) -> Task<void> {
      std::vector<std::byte> out(2 * 16), in(2 * 16);
      const std::span<const std::byte> send[] = {{out.data(), 16}, {out.data() + 16, 16}};
      const std::span<std::byte> recv[] = {{in.data(), 16}, {in.data() + 16, 16}};
      if (p.rank() == 3) {
        co_await p.sleep_for(std::chrono::milliseconds(5));  // the others are parked by now
        throw std::runtime_error("rank 3 fails");
      }
      co_await run_compiled_exchange(p, 4, n, ring.members[p.rank()], CompiledRegions{send, recv}, {});
    });
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3 fails"), std::string::npos) << e.what();
  }
}

}  // namespace
