// Communicators: isolation of contexts (same tags, same pairs, never mixed),
// split and dup, ranks relative to the communicator, collectives on
// sub-communicators running independently, per-communicator busy locks and
// active messages; wait_all and wait_any over tickets.

#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <set>

#include "group_registry.hpp"  // runtime/src: GroupRegistry::kMaxContexts, MemberLines
#include "test_support.hpp"

namespace {

using namespace switchyard;
using sytest::check_message;
using sytest::invalid_argument_of;
using sytest::message_key;
using sytest::pattern;

RunOptions options_for(std::uint64_t eager_limit = 1024) {
  RunOptions o;
  o.eager_limit = eager_limit;
  o.stall_timeout = std::chrono::milliseconds(20'000);
  return o;
}

// Two "libraries" exchange with every other process on their own
// communicators, with the same tags and sizes, each posting its receives
// before the other library sends; every message must land in the library that
// sent it. Payload keys differ per library (seq 1 vs 2).
TEST(Communicator, TwoLibrariesWithTheSameTagsNeverMix) {
  Runtime rt;
  for (std::uint64_t eager : {std::uint64_t{0}, std::uint64_t{1024}}) {
    for (std::size_t size : {std::size_t{8}, std::size_t{3000}}) {
      std::atomic<int> checked{0};
      rt.run(
          16,
          [&](Process& p) -> Task<void> {
            const Communicator a = co_await p.world().dup();
            const Communicator b = co_await p.world().dup();
            SY_CHECK(a.context() != b.context() && a.context() != 0, "fresh contexts");
            const Rank me = p.rank(), n = p.size();
            // Receives on both, any source, one tag: only the context can tell them apart.
            std::vector<RecvTicket> on_a, on_b;
            for (Rank k = 1; k < n; ++k) on_a.push_back(a.post_recv(kAnySource, 7));
            for (Rank k = 1; k < n; ++k) on_b.push_back(b.post_recv(kAnySource, 7));
            std::vector<std::vector<std::byte>> out_a, out_b;
            std::vector<SendTicket> sends;
            for (Rank k = 1; k < n; ++k) out_b.push_back(pattern(size, message_key(me, (me + k) % n, 2)));
            for (Rank k = 1; k < n; ++k) out_a.push_back(pattern(size, message_key(me, (me + k) % n, 1)));
            // Library b sends first, then a: b's messages reach every receiver first.
            for (Rank k = 1; k < n; ++k) sends.push_back(b.post_send((me + k) % n, out_b[k - 1], 7));
            for (Rank k = 1; k < n; ++k) sends.push_back(a.post_send((me + k) % n, out_a[k - 1], 7));
            co_await p.wait_all(std::span(on_a));
            co_await p.wait_all(std::span(on_b));
            co_await p.wait_all(std::span(sends));
            std::set<Rank> from_a, from_b;
            for (auto& t : on_a) {
              const Rank src = t.source();
              check_message(t.take_message(), src, me, 1, size, "library a");
              from_a.insert(src);
            }
            for (auto& t : on_b) {
              const Rank src = t.source();
              check_message(t.take_message(), src, me, 2, size, "library b");
              from_b.insert(src);
            }
            SY_CHECK(from_a.size() == n - 1 && from_b.size() == n - 1, "every sender once per library");
            checked.fetch_add(1);
          },
          options_for(eager));
      EXPECT_EQ(checked.load(), 16);
    }
  }
}

// The same with library() duplicates: the same context every time it is asked
// for, distinct between keys and from the parent.
TEST(Communicator, LibraryDuplicatesAreStableAndDistinct) {
  Runtime rt;
  constexpr LibraryKey kOne("test.one"), kTwo("test.two");
  rt.run(
      8,
      [&](Process& p) -> Task<void> {
        const Communicator world = p.world();
        const Communicator one = world.library(kOne), again = world.library(kOne), two = world.library(kTwo);
        SY_CHECK(one.context() == again.context(), "the same duplicate twice");
        SY_CHECK(one.context() != two.context() && one.context() != world.context(), "distinct contexts");
        SY_CHECK(one.rank() == p.rank() && one.size() == p.size(), "same ranks as the parent");
        const Communicator nested = one.library(kOne);
        SY_CHECK(nested.context() != one.context() && nested.context() != two.context(), "a duplicate's own duplicate");
        // Same tag on the world and on the library's duplicate, posted in the
        // order that would mismatch if contexts were ignored.
        const Rank right = (p.rank() + 1) % p.size(), left = (p.rank() + p.size() - 1) % p.size();
        const auto on_world = pattern(40, message_key(p.rank(), right, 1));
        const auto on_one = pattern(40, message_key(p.rank(), right, 2));
        RecvTicket r_world = world.post_recv(left, 3);
        RecvTicket r_one = one.post_recv(left, 3);
        co_await one.send(right, on_one, 3);
        co_await world.send(right, on_world, 3);
        co_await p.wait(r_world);
        co_await p.wait(r_one);
        check_message(r_world.take_message(), left, p.rank(), 1, 40, "world");
        check_message(r_one.take_message(), left, p.rank(), 2, 40, "library");
      },
      options_for());
}

// The library duplicates of the world that a job asked for are made by the
// next job before its processes start (kept_libraries.hpp), with ids
// derived from (parent, key), as across nodes, where one made when asked for
// on one node takes an id of the node's. One that a job did not ask for is
// not made again by the job after it.
TEST(Communicator, LibraryDuplicatesAskedForAreMadeBeforeTheNextJob) {
  Runtime rt;
  constexpr LibraryKey kOuter("test.kept.outer"), kInner("test.kept.inner");
  // Whether the two duplicates were made in advance, as every process found them.
  auto made_in_advance = [&] {
    std::atomic<int> in_advance{0}, when_asked{0};
    rt.run(4, [&](Process& p) -> Task<void> {
      const Communicator outer = p.world().library(kOuter), inner = outer.library(kInner);
      for (const Communicator* c : {&outer, &inner}) {
        (c->context() & detail::GroupRegistry::kDerivedIdBit ? in_advance : when_asked).fetch_add(1);
      }
      co_return;
    });
    EXPECT_TRUE(in_advance == 0 || when_asked == 0)
        << in_advance << " duplicates were found made in advance, " << when_asked << " made when asked for";
    return in_advance > 0;
  };
  EXPECT_FALSE(made_in_advance()) << "the first job found duplicates made before its processes asked";
  EXPECT_TRUE(made_in_advance()) << "the duplicates asked for in the last job were not made before this one started";
  rt.run(2, [](Process&) -> Task<void> { co_return; });  // asks for none
  EXPECT_FALSE(made_in_advance()) << "duplicates were made for a job after one that did not ask for them";
}

// Context ids are allocated, not hashed: library duplicates and splits up to
// the documented limit all get ids of their own (hashed 32-bit ids collided
// after 36,243 library keys, 52,364 2-way splits), and messages on the last
// one still reach it; one more is refused with the limit named.
TEST(Communicator, ContextIdsAreDistinctUpToTheLimit) {
  Runtime rt;
  const auto limit = static_cast<std::size_t>(detail::GroupRegistry::kMaxContexts);
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        std::vector<ContextId> ids{p.world().context()};
        Communicator last;
        for (std::size_t i = 1; i < limit; ++i) {
          last = p.world().library(LibraryKey("lib" + std::to_string(i)));
          ids.push_back(last.context());
        }
        std::sort(ids.begin(), ids.end());
        SY_CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end(), "two communicators share a context id");
        const auto bytes = pattern(24, message_key(p.rank(), 1 - p.rank(), 7));
        co_await last.send(1 - p.rank(), bytes, 5);
        Message m = co_await last.recv(1 - p.rank(), 5);
        check_message(m, 1 - p.rank(), p.rank(), 7, 24, "on the last communicator");
        try {
          (void)p.world().library(LibraryKey("one too many"));
          SY_CHECK(false, "communicator " << limit + 1 << " was made");
        } catch (const InvalidArgument& e) {
          SY_CHECK(
              std::string(e.what()).find("at most " + std::to_string(limit) + " communicators") != std::string::npos,
              e.what());
        }
      },
      options_for());
  for (std::int64_t ways : {2, 4}) {
    rt.run(
        4,
        [&](Process& p) -> Task<void> {
          std::vector<ContextId> ids;
          Communicator c = p.world();
          const std::size_t splits = (limit - 1) / static_cast<std::size_t>(ways);
          for (std::size_t i = 0; i < splits; ++i) {
            // Every process takes part; the new ones are kept only in the id list (groups live until the job ends).
            const Communicator part = co_await p.world().split(static_cast<std::int64_t>(p.rank()) % ways, 0);
            ids.push_back(part.context());
            c = part;
          }
          std::sort(ids.begin(), ids.end());
          SY_CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end(),
                   "a process's split communicators share an id");
          co_await c.barrier();
        },
        options_for());
  }
}

// Freed communicators give their ids back: a job makes and frees more
// communicators than the limit (dups with a library duplicate each, and 2-way
// splits), each carrying messages, an active message and a busy-lock round
// before it is freed; the ids in use stay few. Before free() a job could make
// kMaxContexts communicators in all.
TEST(Communicator, FreedIdsAreReusedPastTheLimit) {
  Runtime rt;
  const auto limit = static_cast<std::size_t>(detail::GroupRegistry::kMaxContexts);
  constexpr HandlerId kTouch = 3;
  std::atomic<std::uint64_t> touched{0};
  RunOptions o = options_for();
  o.on_active_message(kTouch, [&](Process&, Rank, std::span<const std::byte>) { touched.fetch_add(1); });
  const std::size_t rounds = limit / 3 + 8;  // three communicators a round
  rt.run(
      4,
      [&](Process& p) -> Task<void> {
        std::set<ContextId> ids;
        for (std::size_t i = 0; i < rounds; ++i) {
          for (ContextId id : co_await sytest::make_use_and_free(p, i, 1, kTouch)) ids.insert(id);
        }
        SY_CHECK(ids.size() < 16, ids.size() << " ids used for " << 3 * rounds << " communicators");
      },
      o);
  EXPECT_EQ(touched.load(), 4 * rounds) << "every active message ran before its communicator was freed";
}

// What free() refuses, by name: the world, a library's duplicate, a message
// nobody received, a receive never matched. The job fails; nothing hangs.
TEST(Communicator, FreeRefusesWhatIsLeftOnTheCommunicator) {
  Runtime rt;
  const auto refused = [&](auto body) { return invalid_argument_of([&] { rt.run(2, body, options_for()); }); };
  EXPECT_NE(refused([](Process& p) -> Task<void> {
              Communicator w = p.world();
              co_await w.free();
            }).find("the world communicator lasts as long as its job"),
            std::string::npos);
  EXPECT_NE(refused([](Process& p) -> Task<void> {
              Communicator lib = p.world().library(LibraryKey("x"));
              co_await lib.free();
            }).find("a library's duplicate, freed with the communicator it duplicates"),
            std::string::npos);
  EXPECT_NE(refused([](Process& p) -> Task<void> {
              Communicator d = co_await p.world().dup();
              if (p.rank() == 0) co_await d.send(1, pattern(8, 1), 4);
              co_await p.barrier();  // the message has arrived; nobody receives it
              co_await d.free();
            }).find("message(s) that arrived on it never received"),
            std::string::npos);
  EXPECT_NE(refused([](Process& p) -> Task<void> {
              Communicator d = co_await p.world().dup();
              RecvTicket never = d.post_recv(1 - p.rank(), 4);
              co_await d.free();
            }).find("never matched"),
            std::string::npos);
}

// split by parity, ranked in reverse: each half numbers its members 0.. in
// the order of the keys; point to point and every collective run on each
// half independently, interleaved with collectives on the world.
TEST(Communicator, SplitRunsCollectivesIndependently) {
  Runtime rt;
  for (Rank n : {1u, 2u, 5u, 32u, 257u}) {
    std::atomic<int> done{0};
    rt.run(
        n,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          const Communicator half = co_await p.world().split(me % 2, -static_cast<std::int64_t>(me));
          // Members of my half, in job-rank order, and their ranks in `half` (reverse order).
          std::vector<Rank> members;
          for (Rank r = me % 2; r < n; r += 2) members.push_back(r);
          const Rank size = static_cast<Rank>(members.size());
          SY_CHECK(half.size() == size, "size " << half.size() << " expected " << size);
          const Rank my_rank = static_cast<Rank>(members.size() - 1 - (me / 2));
          SY_CHECK(half.rank() == my_rank, "rank " << half.rank() << " expected " << my_rank);
          for (Rank r = 0; r < size; ++r) {
            SY_CHECK(half.job_rank(r) == members[size - 1 - r], "job_rank(" << r << ")");
            SY_CHECK(half.rank_of_job_rank(members[size - 1 - r]) == r, "rank_of_job_rank");
          }
          if ((me ^ 1) < n) SY_CHECK(half.rank_of_job_rank(me ^ 1) == kAnySource, "the other half is not a member");

          for (int round = 0; round < 3; ++round) {
            // allreduce of {1, job rank}: the half's count and sum.
            const std::int64_t mine[2] = {1, me};
            const auto sums = co_await half.allreduce(std::span<const std::int64_t>(mine));
            std::int64_t want = 0;
            for (Rank r : members) want += r;
            SY_CHECK(sums[0] == size && sums[1] == want, "allreduce on the half, round " << round);
            // A world collective in between must not disturb the halves'.
            const auto world_sum = co_await p.allreduce(std::span<const std::int64_t>(mine));
            SY_CHECK(world_sum[0] == n, "world allreduce");
            const auto all = co_await half.allgather_value<Rank>(me);
            for (Rank r = 0; r < size; ++r) SY_CHECK(all[r] == members[size - 1 - r], "allgather order");
            const std::int64_t one[1] = {static_cast<std::int64_t>(me)};
            const auto below = co_await half.exclusive_scan(std::span<const std::int64_t>(one));
            std::int64_t below_want = 0;
            for (Rank r = 0; r < half.rank(); ++r) below_want += members[size - 1 - r];
            SY_CHECK(below[0] == below_want, "exclusive_scan: " << below[0] << " expected " << below_want);
            const Rank root = static_cast<Rank>(round) % size;
            const auto root_bytes = pattern(100, message_key(half.job_rank(root), 0, round));
            const auto got = co_await half.broadcast(root, root_bytes);
            SY_CHECK(got == root_bytes, "broadcast from half rank " << root);
            co_await half.barrier();
          }
          // Point to point in the half: a ring, ranks relative to the half.
          const Rank right = (half.rank() + 1) % size, left = (half.rank() + size - 1) % size;
          const auto out = pattern(64, message_key(half.rank(), right, 9));
          SendTicket s = half.post_send(right, out, 1);
          Message m = co_await half.recv(left, 1);
          SY_CHECK(m.source() == left, "source " << m.source() << " is relative to the half");
          check_message(m, left, half.rank(), 9, 64, "ring on the half");
          co_await p.wait(s);
          done.fetch_add(1);
        },
        options_for());
    EXPECT_EQ(done.load(), static_cast<int>(n)) << "n = " << n;
  }
}

// Splits of splits, and kUndefined: a process left out gets a null
// communicator, which refuses to be used.
TEST(Communicator, NestedSplitAndUndefinedColor) {
  Runtime rt;
  std::atomic<int> null_seen{0}, quarter_checked{0};
  rt.run(
      24,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        const Communicator some = co_await p.world().split(me % 3 == 0 ? Communicator::kUndefined : 1, me);
        if (me % 3 == 0) {
          SY_CHECK(!some.valid(), "kUndefined gives a null communicator");
          bool threw = false;
          try {
            (void)some.size();
          } catch (const InvalidArgument&) {
            threw = true;
          }
          SY_CHECK(threw, "a null communicator throws InvalidArgument");
          null_seen.fetch_add(1);
          co_return;
        }
        SY_CHECK(some.size() == 16, "16 processes are not multiples of 3");
        const Communicator quarter = co_await some.split(some.rank() % 4, some.rank());
        SY_CHECK(quarter.size() == 4, "quarters of 16");
        const std::int64_t mine[1] = {static_cast<std::int64_t>(me)};
        const auto sum = co_await quarter.allreduce(std::span<const std::int64_t>(mine));
        std::int64_t want = 0;
        for (Rank r = 0; r < 4; ++r) want += quarter.job_rank(r);
        SY_CHECK(sum[0] == want, "allreduce on a split of a split");
        const Communicator copy = co_await quarter.dup();
        SY_CHECK(copy.context() != quarter.context() && copy.rank() == quarter.rank(), "dup keeps ranks");
        co_await copy.barrier();
        quarter_checked.fetch_add(1);
      },
      options_for());
  EXPECT_EQ(null_seen.load(), 8);
  EXPECT_EQ(quarter_checked.load(), 16);
}

// Bad ranks on a communicator are named with its size.
TEST(Communicator, RanksOutsideTheCommunicatorAreInvalidArgument) {
  Runtime rt;
  std::atomic<int> threw{0};
  rt.run(
      6,
      [&](Process& p) -> Task<void> {
        const Communicator half = co_await p.world().split(p.rank() % 2, 0);
        try {
          (void)half.post_send(3, {}, 0);  // halves have 3 processes: ranks 0..2
        } catch (const InvalidArgument& e) {
          SY_CHECK(std::string(e.what()).find("has 3 processes") != std::string::npos, e.what());
          threw.fetch_add(1);
        }
      },
      options_for());
  EXPECT_EQ(threw.load(), 6);
}

// Busy locks belong to the communicator: holding a process's lock on one
// communicator leaves its lock on another free.
TEST(Communicator, BusyLocksArePerCommunicator) {
  Runtime rt;
  rt.run(
      4,
      [&](Process& p) -> Task<void> {
        const Communicator a = co_await p.world().dup();
        const Communicator b = co_await p.world().dup();
        if (p.rank() == 0) {
          SY_CHECK(a.busy_lock(2).try_acquire(), "a's lock of 2 is free");
          SY_CHECK(!a.busy_lock(2).try_acquire(), "and now held");
          SY_CHECK(b.busy_lock(2).try_acquire(), "b's lock of 2 is another lock");
          SY_CHECK(p.busy_lock(2).try_acquire(), "so is the world's");
          a.busy_lock(2).release();
          b.busy_lock(2).release();
          p.busy_lock(2).release();
        }
        co_await p.barrier();
      },
      options_for());
}

// Active messages posted on a sub-communicator: the handler sees the sender's
// rank in it.
TEST(Communicator, ActiveMessagesSeeRanksOfTheirCommunicator) {
  Runtime rt;
  constexpr HandlerId kNote = 11;
  const Rank n = 10;
  std::vector<std::vector<std::pair<Rank, Rank>>> seen(n);  // (src as seen, job rank in body), per job rank
  RunOptions o = options_for();
  o.on_active_message(kNote, [&](Process& self, Rank src, std::span<const std::byte> body) {
    Rank job;
    std::memcpy(&job, body.data(), sizeof job);
    seen[self.rank()].emplace_back(src, job);
  });
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const Communicator half = co_await p.world().split(p.rank() % 2, -static_cast<std::int64_t>(p.rank()));
        const Rank me = p.rank();
        for (Rank r = 0; r < half.size(); ++r) {
          if (r != half.rank()) co_await half.send_active(r, kNote, sytest::bytes_of(me));
        }
        co_await p.wait_until([&] { return seen[me].size() == half.size() - 1; }, "notes");
        for (const auto& [src, job] : seen[me]) {
          SY_CHECK(half.job_rank(src) == job, "handler saw rank " << src << " for job rank " << job);
        }
        co_await p.barrier();
      },
      o);
}

// wait_all and wait_any over tickets, with empty tickets among them.
TEST(Communicator, WaitAllAndWaitAny) {
  Runtime rt;
  rt.run(
      8,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank(), n = p.size();
        if (me == 0) {
          std::vector<RecvTicket> recvs(n + 1);  // recvs[0] and recvs[n] stay empty
          for (Rank r = 1; r < n; ++r) recvs[r] = p.post_recv(r, 5);
          std::set<Rank> got;
          for (Rank k = 1; k < n; ++k) {
            co_await p.send(n - k, sytest::bytes_of(k), 6);  // releases sender n - k
            const std::size_t i = co_await p.wait_any(std::span(recvs));
            SY_CHECK(i >= 1 && i < n, "index " << i);
            SY_CHECK(recvs[i].source() == i, "ticket " << i << " is from " << recvs[i].source());
            got.insert(static_cast<Rank>(i));
            recvs[i] = RecvTicket{};  // done with it: wait_any skips it from now on
          }
          SY_CHECK(got.size() == n - 1, "every sender once");
          SY_CHECK(co_await p.wait_any(std::span(recvs)) == recvs.size(), "all empty: size()");
        } else {
          (void)co_await p.recv(0, 6);
          std::vector<SendTicket> sends(3);
          const auto out = pattern(2000, message_key(me, 0, 0));
          sends[1] = p.post_send(0, out, 5);
          co_await p.wait_all(std::span(sends));
          SY_CHECK(p.test(sends[1]), "wait_all completed the send");
        }
      },
      options_for(0));
}

// A communicator kept past its job. The old runtime answered valid() and
// rank() from the handle, then read the job's freed state: size() died with
// SIGSEGV, and so did a send on it in the next job. Now it is no longer
// valid(), and every call is an InvalidArgument naming the job that made it,
// from outside every job and from a process of the next.
TEST(Communicator, KeptPastItsJobIsInvalidNamingThatJob) {
  Runtime rt;
  Communicator world, dup;
  const JobStats made = rt.run(4, [&](Process& p) -> Task<void> {
    Communicator d = co_await p.world().dup();
    SY_CHECK(p.world().valid() && d.valid() && p.world().job() == d.job(), "valid in its job");
    if (p.rank() == 1) world = p, dup = d;
  });
  ASSERT_GT(made.job, 0u);
  EXPECT_EQ(world.job(), made.job);
  EXPECT_FALSE(world.valid());
  EXPECT_FALSE(dup.valid());
  EXPECT_EQ(world.rank(), 1u);
  const std::string outside = "switchyard: a communicator of job " + std::to_string(made.job) +
                              " (rank 1) used on a thread outside every job: job " + std::to_string(made.job) +
                              " has ended";
  const std::byte word[8]{};
  for (const std::string& error :
       {invalid_argument_of([&] { (void)world.size(); }), invalid_argument_of([&] { (void)dup.context(); }),
        invalid_argument_of([&] { (void)world.process(); }), invalid_argument_of([&] { (void)world.job_rank(0); }),
        invalid_argument_of([&] { (void)world.post_send(0, word); }),
        invalid_argument_of([&] { (void)dup.post_recv(0); }),
        invalid_argument_of([&] { (void)world.library(LibraryKey("kept")); })}) {
    EXPECT_EQ(error.rfind(outside, 0), 0u) << error;
  }

  std::atomic<int> refused{0};
  const JobStats next = rt.run(4, [&](Process& p) -> Task<void> {
    SY_CHECK(!world.valid() && p.world().job() != world.job(), "a new job");
    const std::string in_next = "switchyard: a communicator of job " + std::to_string(made.job) +
                                " (rank 1) used in job " + std::to_string(p.world().job()) + ": job " +
                                std::to_string(made.job) + " has ended";
    for (const std::string& error :
         {invalid_argument_of([&] { (void)world.send(0, word); }), invalid_argument_of([&] { (void)dup.size(); }),
          invalid_argument_of([&] { (void)dup.recv(kAnySource); })}) {
      SY_CHECK(error.rfind(in_next, 0) == 0, error);
    }
    ++refused;
    co_return;
  });
  EXPECT_EQ(refused.load(), 4);
  EXPECT_EQ(next.job, made.job + 1);
}

// A body that is not a coroutine may use its process before it returns the task.
TEST(Communicator, ValidWhileTheBodiesAreCalled) {
  Runtime rt;
  std::atomic<int> sized{0};
  rt.run(3, [&](Process& p) {
    sized += p.world().valid() && p.world().size() == 3;
    return [](Process& q) -> Task<void> { co_await q.barrier(); }(p);
  });
  EXPECT_EQ(sized.load(), 3);
}

// The lines each member writes on its own core (a communicator's member
// states, a compiled exchange's slots and counts): round robin over two of
// this node's cores and a third core of another node, in two arrays of
// lines from one job's pages. Each member's line is its own; no page holds
// lines of two of this node's cores; each core's members lie in comm-rank
// order; the two arrays take no more than a chunk of pages per core; and
// arrays freed give their lines to the next arrays of as many lines, so
// that making and freeing a thousand takes no more.
TEST(Communicator, EachCoresMemberLinesLieOnPagesOfTheirOwn) {
  using detail::MemberPages;
  constexpr Rank kMembers = 150;
  detail::MemberCores cores;
  cores.count.assign(3, 0);
  cores.here = {true, true, false};
  for (Rank r = 0; r < kMembers; ++r) {
    cores.core.push_back(r % 3);
    cores.index.push_back(cores.count[r % 3]++);
  }
  struct alignas(kCacheLine) Line {
    std::uint64_t value = 0;
  };
  MemberPages pages(cores.count.size());
  std::set<std::uintptr_t> pages_seen;
  {
    const detail::MemberLines<Line> first(cores, pages), second(cores, pages);
    std::map<std::uintptr_t, std::set<std::uint32_t>> cores_on_page;
    std::set<const Line*> lines;
    for (const auto* array : {&first, &second}) {
      for (Rank r = 0; r < kMembers; ++r) {
        const Line* line = &(*array)[r];
        EXPECT_EQ(line->value, 0u);
        EXPECT_TRUE(lines.insert(line).second) << "member " << r << " shares a line";
        const auto address = reinterpret_cast<std::uintptr_t>(line);
        if (cores.here[cores.core[r]]) cores_on_page[address / MemberPages::kPageBytes].insert(cores.core[r]);
        pages_seen.insert(address / MemberPages::kPageBytes);
        if (r >= 3) {
          EXPECT_EQ(line, &(*array)[r - 3] + 1) << "member " << r << " is not next to its core's member before it";
        }
      }
    }
    std::map<std::uint32_t, std::size_t> pages_of_core;
    for (const auto& [page, on_it] : cores_on_page) {
      EXPECT_EQ(on_it.size(), 1u) << "a page holds lines of two cores";
      ++pages_of_core[*on_it.begin()];
    }
    EXPECT_EQ(pages_of_core.size(), 2u);
    for (const auto& [core, taken] : pages_of_core) {
      EXPECT_LE(taken, MemberPages::kChunkBytes / MemberPages::kPageBytes) << "core " << core;
    }
  }
  for (int i = 0; i < 1000; ++i) {
    const detail::MemberLines<Line> again(cores, pages);
    for (Rank r = 0; r < kMembers; ++r) {
      ASSERT_TRUE(pages_seen.count(reinterpret_cast<std::uintptr_t>(&again[r]) / MemberPages::kPageBytes))
          << "array " << i << " took new pages for member " << r;
    }
  }
}

}  // namespace
