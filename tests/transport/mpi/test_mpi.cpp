// Jobs across nodes: the same binary runs as one node (plain ctest) and as 2
// or 3 MPI ranks (ctest -L mpi: mpiexec -np R), every node running every test
// in the same order (SPMD over nodes). Every check runs inside the processes,
// so each node checks its own ranks; a failure anywhere fails every node's
// run() (RemoteFailure on the others).

#include <switchyard/node_reduction.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/span_timer.hpp>
#include "network_session.hpp"
#include "network_transport.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <thread>

#include "group_registry.hpp"  // runtime/src: GroupRegistry::kMaxContexts
#include "test_support.hpp"

namespace {

using namespace switchyard;
using sytest::check_message;
using sytest::message_key;
using sytest::pattern;

std::uint32_t launched_nodes() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size ? static_cast<std::uint32_t>(std::atoi(size)) : 1;
}

// One Runtime for the whole program: MPI is initialised once, by the first.
Runtime& runtime() {
  static Runtime rt;
  return rt;
}

RunOptions options(std::uint64_t eager_limit = 512, std::size_t ring_capacity = 1024,
                   std::uint64_t network_eager_limit = 4096) {
  RunOptions o;
  o.eager_limit = eager_limit;
  o.network_eager_limit = network_eager_limit;
  o.ring_capacity = ring_capacity;
  o.stall_timeout = std::chrono::milliseconds(20'000);
  return o;
}

using sytest::JobFailure;

TEST(MpiLaunch, NodesAndBlockPlacement) {
  Runtime& rt = runtime();
  ASSERT_EQ(rt.nodes(), launched_nodes());
  ASSERT_LT(rt.node(), rt.nodes());
  for (std::uint64_t n : {1u, 2u, 5u, 16u}) {
    std::atomic<std::uint64_t> here{0}, rank_sum{0};
    rt.run(n, [&](Process& p) -> Task<void> {
      here.fetch_add(1, std::memory_order_relaxed);
      rank_sum.fetch_add(p.rank(), std::memory_order_relaxed);
      SY_CHECK(p.size() == n, "size " << p.size());
      co_return;
    });
    const std::uint64_t per = (n + rt.nodes() - 1) / rt.nodes();
    const std::uint64_t first = std::min<std::uint64_t>(n, rt.node() * per);
    const std::uint64_t last = std::min<std::uint64_t>(n, first + per);
    EXPECT_EQ(here.load(), last - first) << "n = " << n;
    std::uint64_t want = 0;
    for (std::uint64_t r = first; r < last; ++r) want += r;
    EXPECT_EQ(rank_sum.load(), want) << "n = " << n;
    EXPECT_EQ(rt.local_ranks(n).first, first) << "n = " << n;
    EXPECT_EQ(rt.local_ranks(n).end, last) << "n = " << n;
  }
}

TEST(MpiLaunch, SumOverNodes) {
  Runtime& rt = runtime();
  const std::int64_t mine[] = {rt.node() + 1, 7};
  const std::vector<std::int64_t> sum = rt.sum_over_nodes(mine);
  const std::int64_t r = rt.nodes();
  EXPECT_EQ(sum, (std::vector<std::int64_t>{r * (r + 1) / 2, 7 * r}));
}

// Sums and maxima over the nodes in one reduction, each stretch in its place.
TEST(MpiLaunch, NodeReductionSumsAndMaxima) {
  Runtime& rt = runtime();
  const std::int64_t node = rt.node(), r = rt.nodes();
  NodeReduction over;
  const std::int64_t a[] = {node + 1, -node}, b[] = {10 * node, 5 - node, 7}, c[] = {node};
  const auto sums = over.add(a, NodeReduction::kSum);
  const auto maxima = over.add(b, NodeReduction::kMax);
  const auto more = over.add(c, NodeReduction::kSum);
  const auto none = over.add({}, NodeReduction::kMax);
  over.combine(rt);
  EXPECT_EQ(std::vector<std::int64_t>(over.result(sums).begin(), over.result(sums).end()),
            (std::vector<std::int64_t>{r * (r + 1) / 2, -r * (r - 1) / 2}));
  EXPECT_EQ(std::vector<std::int64_t>(over.result(maxima).begin(), over.result(maxima).end()),
            (std::vector<std::int64_t>{10 * (r - 1), 5, 7}));
  EXPECT_EQ(over.result(more).front(), r * (r - 1) / 2);
  EXPECT_TRUE(over.result(none).empty());
}

// The span of a repetition is the job's on every node: the longest node's,
// whichever node holds the slow process, and never a span between one
// node's stamps and the unset stamps of another's processes.
TEST(MpiLaunch, SpanTimerAcrossNodes) {
  Runtime& rt = runtime();
  constexpr Rank n = 6;
  SpanTimer timer(rt, 2);
  rt.run(n, [&](Process& p) -> Task<void> {
    for (std::uint32_t rep = 0; rep < 2; ++rep) {
      co_await p.barrier();
      timer.start(rep, p);
      // Repetition 0: the last rank (the last node) is slow; repetition 1: rank 0 (node 0).
      if (p.rank() == (rep == 0 ? n - 1 : 0)) co_await p.sleep_for(std::chrono::milliseconds(30 + 30 * rep));
      timer.end(rep, p);
    }
  });
  const std::vector<double> ms = timer.milliseconds(rt);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_GE(ms[0], 30.0);
  EXPECT_GE(ms[1], 60.0);
  for (double v : ms) EXPECT_LT(v, 5000.0);
}

// A plan of messages every process computes alike: for each sender, a list of
// (destination, size, tag, synchronous).
struct Planned {
  Rank dst;
  std::size_t size;
  Tag tag;
  bool synchronous;
  bool into;  // received into a buffer of the caller's
};

std::vector<std::vector<Planned>> random_plan(Rank n, std::size_t per_sender, std::uint64_t seed) {
  static constexpr std::size_t kSizes[] = {0, 8, 16, 100, 511, 512, 513, 1024, 4096, 4097, 70'000, 300'000};
  SplitMix64 rng(seed);
  std::vector<std::vector<Planned>> plan(n);
  for (Rank s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < per_sender; ++i) {
      plan[s].push_back(Planned{static_cast<Rank>(rng() % n), kSizes[rng() % std::size(kSizes)],
                                static_cast<Tag>(1 + rng() % 2), rng() % 5 == 0, rng() % 2 == 0});
    }
  }
  return plan;
}

struct Expected {
  Rank src;
  std::uint64_t seq;  // index in the sender's list
  Planned m;
};

// Every process sends its planned messages and receives what is planned for
// it, each receive posted per source in the order of the plan: a receive for
// (src, tag) must get that pair's next message, byte for byte.
Task<void> random_traffic(Process& p, const std::vector<std::vector<Planned>>& plan) {
  const Rank me = p.rank();
  std::vector<Expected> mine;
  for (Rank s = 0; s < p.size(); ++s) {
    for (std::uint64_t i = 0; i < plan[s].size(); ++i) {
      if (plan[s][i].dst == me) mine.push_back(Expected{s, i, plan[s][i]});
    }
  }
  std::vector<std::vector<std::byte>> out, in(mine.size());
  std::vector<SendTicket> sends;
  std::vector<RecvTicket> recvs;
  const auto post_receives = [&] {
    for (std::size_t k = 0; k < mine.size(); ++k) {
      const Expected& e = mine[k];
      if (e.m.into) {
        in[k].resize(e.m.size);
        recvs.push_back(p.post_recv_into(e.src, in[k], e.m.tag));
      } else {
        recvs.push_back(p.post_recv(e.src, e.m.tag));
      }
    }
  };
  // Odd ranks receive first (their messages find posted receives), even ones
  // send first (theirs arrive unexpected).
  if (me % 2 == 1) post_receives();
  for (std::uint64_t i = 0; i < plan[me].size(); ++i) {
    const Planned& m = plan[me][i];
    out.push_back(pattern(m.size, message_key(me, m.dst, i, m.tag)));
    sends.push_back(m.synchronous ? p.post_ssend(m.dst, out.back(), m.tag) : p.post_send(m.dst, out.back(), m.tag));
  }
  if (me % 2 == 0) post_receives();
  co_await p.wait_all(recvs);
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const Expected& e = mine[k];
    const std::uint64_t key = message_key(e.src, me, e.seq, e.m.tag);
    SY_CHECK(recvs[k].size() == e.m.size, "message " << e.seq << " of " << e.src << " to " << me << ": "
                                                     << recvs[k].size() << " bytes, expected " << e.m.size);
    if (e.m.into) {
      SY_CHECK(sytest::first_mismatch(in[k], key) == std::string::npos,
               "message " << e.seq << " of " << e.src << " to " << me << ": wrong bytes");
    } else {
      const Message got = recvs[k].take_message();
      SY_CHECK(sytest::first_mismatch(got.bytes(), key) == std::string::npos,
               "message " << e.seq << " of " << e.src << " to " << me << ": wrong bytes");
    }
  }
  co_await p.wait_all(sends);
}

class MpiRandomTraffic : public ::testing::TestWithParam<std::size_t> {};

TEST_P(MpiRandomTraffic, EveryByteInOrderNothingLost) {
  Runtime& rt = runtime();
  const std::size_t ring_capacity = GetParam();
  // Every message by rendezvous, then the default limits (eager up to 512 B
  // within a node, up to 4 KiB across nodes).
  for (std::uint64_t eager : {std::uint64_t{0}, std::uint64_t{512}}) {
    const std::uint64_t network_eager = eager == 0 ? 0 : 4096;
    for (Rank n : {Rank{2}, Rank{7}, Rank{12}}) {
      const auto plan = random_plan(n, 24, n * 1000 + eager + ring_capacity);
      rt.run(
          n, [&](Process& p) -> Task<void> { co_await random_traffic(p, plan); },
          options(eager, ring_capacity, network_eager));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RingCapacity, MpiRandomTraffic, ::testing::Values(std::size_t{1}, std::size_t{1024}));

// Many small messages in one round towards one process on another node: they
// leave in batches (several packets per MPI message), and a capacity-1 window
// still lets every one through.
TEST(MpiBatches, ThousandsOfSmallMessagesBothWays) {
  Runtime& rt = runtime();
  for (std::size_t ring_capacity : {std::size_t{1}, std::size_t{1024}}) {
    rt.run(
        2,
        [&](Process& p) -> Task<void> {
          constexpr std::uint64_t kCount = 3000;
          const Rank peer = 1 - p.rank();
          std::vector<std::uint64_t> out(kCount), in(kCount);
          std::vector<SendTicket> sends;
          std::vector<RecvTicket> recvs;
          for (std::uint64_t i = 0; i < kCount; ++i) {
            recvs.push_back(p.post_recv_into(peer, std::as_writable_bytes(std::span(&in[i], 1)), 3));
          }
          for (std::uint64_t i = 0; i < kCount; ++i) {
            out[i] = message_key(p.rank(), peer, i);
            sends.push_back(p.post_send(peer, std::as_bytes(std::span(&out[i], 1)), 3));
          }
          co_await p.wait_all(sends);
          co_await p.wait_all(recvs);
          for (std::uint64_t i = 0; i < kCount; ++i) {
            SY_CHECK(in[i] == message_key(peer, p.rank(), i), "message " << i << " from " << peer);
          }
        },
        options(512, ring_capacity));
  }
}

// Eager messages across nodes larger than a pre-posted receive (network
// eager limit 1 MiB): their batches are announced and received on their own,
// in order with the small ones around them, every byte verified.
TEST(MpiBatches, EagerMessagesLargerThanAPostedReceive) {
  Runtime& rt = runtime();
  RunOptions o = options(512, 1024, std::uint64_t{1} << 20);
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        static constexpr std::size_t kSizes[] = {8, 100'000, 8, 300'000, 16, 1'048'576, 0};
        const Rank peer = 1 - p.rank();
        std::vector<std::vector<std::byte>> out;
        std::vector<SendTicket> sends;
        std::vector<RecvTicket> recvs;
        for (std::size_t i = 0; i < std::size(kSizes); ++i) {
          out.push_back(pattern(kSizes[i], message_key(p.rank(), peer, i)));
          sends.push_back(p.post_send(peer, out.back(), 4));
        }
        for (std::size_t i = 0; i < std::size(kSizes); ++i) recvs.push_back(p.post_recv(peer, 4));
        co_await p.wait_all(recvs);
        for (std::size_t i = 0; i < std::size(kSizes); ++i) {
          const Message m = recvs[i].take_message();
          SY_CHECK(m.size() == kSizes[i] &&
                       sytest::first_mismatch(m.bytes(), message_key(peer, p.rank(), i)) == std::string::npos,
                   "message " << i << " from " << peer << ": " << m.size() << " bytes");
        }
        co_await p.wait_all(sends);
      },
      o);
}

// Two Runtimes of one program take turns running jobs across the nodes. Every
// process sends to every process on another node the moment it starts, so a
// node that leaves a job first sends its next job's first batches while the
// others may still be leaving the previous one; every fifth job, a process
// throws right after sending, so that batches and credits are in flight when
// the job is cancelled. Every message arrives, every byte checked; every
// failure ends on every node with the thrower's error, within the stall
// timeout. (Before the job numbers were the MPI session's: each Runtime
// counted its own, the two Runtimes' jobs had the same number and so the
// same tags, and a node's receive still posted for the job it was leaving
// took a batch of the other Runtime's job, which then never came: a stall,
// or a drain that never finished and MPI_Abort.)
TEST(MpiJobs, TwoRuntimesTakingTurnsKeepTheirJobsApart) {
  Runtime& first = runtime();
  if (first.nodes() == 1) GTEST_SKIP() << "needs 2 nodes or more";
  Runtime second;
  const Rank n = 2 * first.nodes();
  RunOptions o = options();
  o.stall_timeout = std::chrono::milliseconds(2'000);  // a lost message fails the job rather than hanging
  constexpr std::uint64_t kJobs = 40;
  for (std::uint64_t job = 0; job < kJobs; ++job) {
    Runtime& rt = job % 2 == 0 ? first : second;
    const bool failing = job % 5 == 4;  // each Runtime in turn, and a thrower on each node in turn
    const Rank thrower = static_cast<Rank>(2 * (job % first.nodes()));  // the first rank of one node, in turn
    const JobFailure e = sytest::run_failing(
        rt, n,
        [&](Process& p) -> Task<void> {
          const std::uint32_t node = static_cast<std::uint32_t>(p.rank() / 2);
          std::vector<std::uint64_t> out, in;
          std::vector<Rank> peers;
          for (Rank q = 0; q < n; ++q) {
            if (q / 2 != node) peers.push_back(q);
          }
          out.resize(peers.size());
          in.resize(peers.size());
          std::vector<SendTicket> sends;
          std::vector<RecvTicket> recvs;
          for (std::size_t i = 0; i < peers.size(); ++i) {
            out[i] = message_key(p.rank(), peers[i], job);
            sends.push_back(p.post_send(peers[i], std::as_bytes(std::span(&out[i], 1)), 5));
            recvs.push_back(p.post_recv_into(peers[i], std::as_writable_bytes(std::span(&in[i], 1)), 5));
          }
          if (failing && p.rank() == thrower) throw std::runtime_error("boom in job " + std::to_string(job));
          co_await p.wait_all(recvs);
          co_await p.wait_all(sends);
          for (std::size_t i = 0; i < peers.size(); ++i) {
            SY_CHECK(in[i] == message_key(peers[i], p.rank(), job), "job " << job << ": from rank " << peers[i]);
          }
        },
        o);
    if (!failing) {
      ASSERT_EQ(e.kind, JobFailure::kNormally) << "job " << job << ": " << e.error;
      continue;
    }
    const bool throwing_node = rt.node() == thrower / 2;
    ASSERT_EQ(e.kind, throwing_node ? JobFailure::kOriginal : JobFailure::kRemote) << "job " << job << ": " << e.error;
    EXPECT_NE(e.error.find("boom in job " + std::to_string(job)), std::string::npos) << e.error;
    EXPECT_LT(e.took, o.stall_timeout) << "job " << job;
  }
}

// A ping-pong sends each message alone, so across nodes each leaves as a
// compact batch (a 32-byte header, the payload unpadded, its size what is left
// of the MPI message) when it fits a pre-posted receive, and as an ordinary
// batch past that. Every size around the slot and cache-line edges, up to the
// largest compact one and one byte past it, on the world and on a split that
// numbers the two ranks the other way round (another context): each message
// is received from any source on its own tag, and its size, sender and every
// byte are checked.
TEST(MpiBatches, LoneMessagesOfEverySizeKeepSizeSenderTagAndBytes) {
  Runtime& rt = runtime();
  constexpr std::size_t kPostedBytes = detail::NetworkTransport::kPostedBatchSlots * sizeof(detail::Slot);
  constexpr std::size_t kLargestCompact = kPostedBytes - 2 * sizeof(detail::Slot);
  static constexpr std::size_t kSizes[] = {
      0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 100, 1000, 4096, kLargestCompact, kLargestCompact + 1};
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        const Communicator world = p.world();
        const Communicator reversed = co_await world.split(0, -static_cast<std::int64_t>(world.rank()));
        for (const Communicator& c : {world, reversed}) {
          const Rank me = c.rank(), peer = 1 - me;
          for (std::size_t i = 0; i < std::size(kSizes); ++i) {
            const Tag tag = static_cast<Tag>(1 + i % 5);
            const std::uint64_t key = message_key(0, 1, i, tag);  // the message from comm rank 0
            if (me == 0) {
              const std::vector<std::byte> out = pattern(kSizes[i], key);
              co_await c.send(peer, out, tag);
              std::vector<std::byte> back(kSizes[i]);
              SY_CHECK(co_await c.recv_into(peer, back, tag) == kSizes[i], "echo of " << kSizes[i] << " bytes");
              SY_CHECK(sytest::first_mismatch(back, key + 1) == std::string::npos, "echo of " << kSizes[i] << " bytes");
            } else {
              const Message m = co_await c.recv(kAnySource, tag);
              SY_CHECK(m.size() == kSizes[i] && m.source() == peer && m.tag() == tag,
                       m.size() << " bytes from " << m.source() << " tag " << m.tag() << ", expected " << kSizes[i]
                                << " from " << peer << " tag " << tag);
              SY_CHECK(sytest::first_mismatch(m.bytes(), key) == std::string::npos, kSizes[i] << " bytes: wrong bytes");
              co_await c.send(peer, pattern(kSizes[i], key + 1), tag);
            }
          }
        }
      },
      options(512, 1024, std::uint64_t{1} << 20));
}

// The MPI transport's flow control, driven by hand between node 0 (sender)
// and node 1 (receiver), one core each, with a window of 4 slots (ring
// capacity 1): an 8-byte packet takes 3 slots. The window lets the first
// batch go and holds the next packet in node 0's staging until node 1
// credits what it took; only a credit completes a packet past the window.
class Collected final : public detail::ArrivalSink, public detail::PayloadSink {
 public:
  void arrived(const detail::WireHeader& h, std::span<const std::byte> payload) override {
    std::uint64_t value = 0;
    std::memcpy(&value, payload.data(), std::min(payload.size(), sizeof value));
    values.push_back(h.size == sizeof value ? value : ~std::uint64_t{0});
  }
  void payload_sent(detail::SendState&) override { ADD_FAILURE() << "no rendezvous in this test"; }
  void payload_received(detail::RecvState&) override { ADD_FAILURE() << "no rendezvous in this test"; }
  std::vector<std::uint64_t> values;
};

TEST(MpiCredits, AWindowOfFourSlotsHoldsPacketsUntilTheReceiverCredits) {
  runtime();  // MPI initialised as the other tests have it
  // A session of its own, as a Runtime's (collective over the nodes).
  const std::unique_ptr<detail::NetworkSession> session = detail::open_network_session();
  if (!session) GTEST_SKIP() << "needs 2 nodes or more (mpiexec -np 2)";
  const std::uint32_t me = session->node(), nodes = session->nodes();
  std::vector<std::uint32_t> node_of(nodes), core_of(nodes, 0), cores(nodes, 1);
  std::iota(node_of.begin(), node_of.end(), 0u);
  const detail::RouteTable routes(node_of, core_of, cores);
  const auto barrier = [&] { session->allgather({}); };
  constexpr std::uint64_t kWindow = 4;
  Collected got;
  auto transport = session->make_transport();
  // A job of the session's like any other (a number of its own): the runtime's
  // jobs before and after it keep their packets apart from this one's.
  const std::unique_ptr<detail::NetworkJob> job = session->begin_job(1, [] {});
  transport->attach(*job, routes, 0, kWindow, got);
  // Polls and flushes until done() (false after 5 s).
  const auto drive_until = [&](auto done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      transport->poll(got);
      transport->flush();
    }
    return true;
  };
  const auto post = [&](std::uint64_t value) {
    detail::WireHeader h{};
    h.kind = detail::WireKind::kEager;
    h.src = 0;
    h.dst = 1;
    h.size = sizeof value;
    return transport->post(routes[1], h, std::as_bytes(std::span(&value, 1)));
  };
  if (me == 0) {
    const std::uint64_t first = post(100), second = post(101), third = post(102);
    EXPECT_EQ(first, 3u);
    EXPECT_TRUE(transport->accepted(routes[1], first));
    EXPECT_FALSE(transport->accepted(routes[1], second)) << "6 slots in a window of 4";
    transport->flush();  // the first left at once (no batch in flight), the other two now: 3 slots were uncredited
    const std::uint64_t fourth = post(103);
    transport->flush();  // 9 slots uncredited: the fourth waits
    EXPECT_TRUE(transport->has_staged());
    barrier();  // A: node 1 takes the batch, and credits nothing before B
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) transport->poll(got);
    EXPECT_FALSE(transport->accepted(routes[1], third)) << "credited before node 1 flushed";
    barrier();  // B
    EXPECT_TRUE(drive_until([&] { return transport->accepted(routes[1], fourth); })) << "no credit came";
    EXPECT_TRUE(drive_until([&] { return !transport->has_requests() && !transport->has_staged(); }))
        << "the fourth packet was never credited";
  } else if (me == 1) {
    barrier();  // A
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) transport->poll(got);  // no flush: no credit
    EXPECT_EQ(got.values, (std::vector<std::uint64_t>{100, 101, 102})) << "the window let the fourth through";
    barrier();  // B
    EXPECT_TRUE(drive_until([&] { return got.values.size() == 4; })) << "the fourth packet never came";
    transport->finishing();
    EXPECT_TRUE(drive_until([&] { return !transport->has_requests() && !transport->has_staged(); }));
    EXPECT_EQ(got.values, (std::vector<std::uint64_t>{100, 101, 102, 103}));
  } else {
    barrier();
    barrier();
  }
  barrier();  // C: every batch and credit received
  transport->detach();
}

// Every collective on the world, on a split whose groups span nodes, and on a
// duplicate of that split, each against the sequential reference that every
// process computes for itself.
Task<void> check_collectives(const Communicator& c, std::uint64_t round) {
  const Rank n = c.size(), me = c.rank();
  const auto input = [&](Rank r) {  // rank r's bytes: 1 + (r % 5) of them
    return pattern(1 + r % 5, message_key(r, n, round));
  };
  const auto value = [&](Rank r, std::size_t i) { return static_cast<std::int64_t>(r * 1000 + i * 7 + round); };

  co_await c.barrier();
  std::vector<std::byte> want_gather;
  for (Rank r = 0; r < n; ++r) {
    const auto b = input(r);
    want_gather.insert(want_gather.end(), b.begin(), b.end());
  }
  SY_CHECK(co_await c.allgather(input(me)) == want_gather, "allgather on rank " << me << " of " << n);

  std::vector<std::int64_t> mine(3), want_sum(3, 0), want_scan(3, 0);
  for (std::size_t i = 0; i < 3; ++i) mine[i] = value(me, i);
  for (Rank r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < 3; ++i) {
      if (r < me) want_scan[i] += value(r, i);
      want_sum[i] += value(r, i);
    }
  }
  SY_CHECK(co_await c.allreduce(mine) == want_sum, "allreduce on rank " << me << " of " << n);
  SY_CHECK(co_await c.exclusive_scan(mine) == want_scan, "exclusive_scan on rank " << me << " of " << n);
  for (Rank root : {Rank{0}, static_cast<Rank>(n - 1), static_cast<Rank>(n / 2)}) {
    const auto sent = pattern(40 + root, message_key(root, 99, round));
    const auto got =
        co_await c.broadcast(root, me == root ? std::span<const std::byte>(sent) : std::span<const std::byte>{});
    SY_CHECK(got == sent, "broadcast from " << root << " on rank " << me << " of " << n);
  }
  const auto values = co_await c.allgather_value(static_cast<std::uint64_t>(me * me + round));
  for (Rank r = 0; r < n; ++r) SY_CHECK(values[r] == r * r + round, "allgather_value of " << r);
}

// Between nodes, collectives go by messages between the leaders of every
// core of every node.
TEST(MpiCollectives, EveryCollectiveOnWorldSplitAndDup) {
  Runtime& rt = runtime();
  for (Rank n : {Rank{1}, Rank{3}, Rank{8}, Rank{13}}) {
    rt.run(
        n,
        [&](Process& p) -> Task<void> {
          for (std::uint64_t round = 0; round < 3; ++round) co_await check_collectives(p.world(), round);
          // Colors by rank mod 3 put ranks of every node in one group; keys reverse the order.
          const Communicator split = co_await p.world().split(p.rank() % 3, -static_cast<std::int64_t>(p.rank()));
          std::vector<Rank> members;
          for (Rank r = p.size(); r-- > 0;) {
            if (r % 3 == p.rank() % 3) members.push_back(r);
          }
          SY_CHECK(split.size() == members.size(), "split size " << split.size());
          for (Rank i = 0; i < split.size(); ++i) SY_CHECK(split.job_rank(i) == members[i], "split member " << i);
          for (std::uint64_t round = 0; round < 2; ++round) co_await check_collectives(split, round);
          const Communicator dup = co_await split.dup();
          SY_CHECK(dup.context() != split.context(), "a fresh context");
          co_await check_collectives(dup, 7);
          // Point to point on the split: a ring, tags alike on both communicators.
          const Rank next = (split.rank() + 1) % split.size(), prev = (split.rank() + split.size() - 1) % split.size();
          const auto out = pattern(2000, message_key(split.rank(), next, 5));
          auto on_split = split.post_recv(prev, 1);
          auto send = split.post_send(next, out, 1);
          co_await p.wait(send);
          co_await p.wait(on_split);
          const Message m = on_split.take_message();
          SY_CHECK(sytest::first_mismatch(m.bytes(), message_key(prev, split.rank(), 5)) == std::string::npos &&
                       m.size() == 2000 && m.source() == prev,
                   "ring on the split from " << prev);
          // A color of its own (kUndefined) for odd ranks.
          const Communicator evens = co_await p.world().split(p.rank() % 2 ? Communicator::kUndefined : 0, 0);
          SY_CHECK(evens.valid() == (p.rank() % 2 == 0), "kUndefined gives a null communicator");
          if (evens.valid()) co_await check_collectives(evens, 11);
          // Members on every node but the last (with 3 nodes, a communicator
          // across two of them), and a library's duplicate.
          const Communicator most = co_await p.world().split(
              p.rank() < std::max<Rank>(1, p.size() - p.size() / 3) ? 0 : Communicator::kUndefined, 0);
          if (most.valid()) co_await check_collectives(most, 12);
          co_await check_collectives(p.world().library(LibraryKey("test_mpi")), 13);
          co_await check_collectives(p.world(), 14);
        },
        options());
  }
}

// Larger shares: a broadcast of 70,000 bytes (past the eager limit between
// nodes: a rendezvous between the cores' leaders), an allgather of 100-640
// bytes a rank, allreduce and scan of 100 elements, every byte checked; and a
// vector of 0 elements.
TEST(MpiCollectives, LargeSharesEveryByteChecked) {
  Runtime& rt = runtime();
  const Rank n = 7;
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const Communicator world = p.world();
        const auto input = [](Rank r) { return pattern(100 + 90 * r, message_key(r, 0, 77)); };
        std::vector<std::byte> want;
        for (Rank r = 0; r < n; ++r) {
          const auto b = input(r);
          want.insert(want.end(), b.begin(), b.end());
        }
        SY_CHECK(co_await world.allgather(input(p.rank())) == want, "large allgather on rank " << p.rank());
        const auto sent = pattern(70'000, message_key(5, 1, 2));
        const auto got = co_await world.broadcast(
            5, p.rank() == 5 ? std::span<const std::byte>(sent) : std::span<const std::byte>{});
        SY_CHECK(got == sent, "large broadcast on rank " << p.rank());
        std::vector<std::int64_t> mine(100), want_sum(100, 0), want_scan(100, 0);
        for (std::size_t i = 0; i < 100; ++i) {
          mine[i] = static_cast<std::int64_t>(p.rank() * 100'000 + i);
          for (Rank r = 0; r < n; ++r) {
            want_sum[i] += static_cast<std::int64_t>(r * 100'000 + i);
            if (r < p.rank()) want_scan[i] += static_cast<std::int64_t>(r * 100'000 + i);
          }
        }
        SY_CHECK(co_await world.allreduce(mine) == want_sum, "large allreduce on rank " << p.rank());
        SY_CHECK(co_await world.exclusive_scan(mine) == want_scan, "large exclusive_scan on rank " << p.rank());
        SY_CHECK((co_await world.allreduce(std::span<const std::int64_t>{})).empty(), "empty allreduce");
      },
      options());
}

// An allreduce whose vectors differ in length between nodes is an
// InvalidArgument (on the nodes that see it; a RemoteFailure on the others),
// not a hang or MPI's error; and the next job runs.
TEST(MpiCollectives, AllreduceOfDifferentLengthsOnDifferentNodesFails) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << "needs 2 nodes";
  const Rank n = 2 * rt.nodes();
  const JobFailure e = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        const std::vector<std::int64_t> mine(p.rank() < 2 ? 3 : 4, 1);  // node 0: 3 elements, the others 4
        co_await p.allreduce(mine);
      },
      options());
  EXPECT_NE(e.kind, JobFailure::kNormally);
  EXPECT_NE(e.error.find("allreduce"), std::string::npos) << e.error;
  EXPECT_NE(e.error.find("elements"), std::string::npos) << e.error;
  rt.run(
      n, [&](Process& p) -> Task<void> { co_await check_collectives(p.world(), 2); }, options());
}

// Context ids across nodes are allocated by the new communicator's rank 0's
// node and agreed in the collective that makes it: 2-way splits of the world
// across the nodes, each derived again (a dup in one color, a split in the
// other), kept alive up to the limit of live communicators, all distinct in
// every process's view. (Hashed from how they were made, ids collided after
// about 52,364 such communicators, with "derive the communicators in another
// order".)
TEST(MpiCommunicators, ContextIdsAcrossNodesAreDistinctUpToTheLimit) {
  Runtime& rt = runtime();
  const auto limit = static_cast<std::size_t>(detail::GroupRegistry::kMaxContexts);
  rt.run(
      2 * rt.nodes(),
      [&](Process& p) -> Task<void> {
        std::vector<ContextId> ids{p.world().context()};
        Communicator last;
        // Every node holds the world and 4 communicators a round (both colors' two).
        while (ids.size() * 2 + 4 < limit) {
          const Communicator s = co_await p.world().split(p.rank() % 2, 0);  // ranks of every node in each
          const Communicator t = p.rank() % 2 == 0 ? co_await s.dup() : co_await s.split(0, -std::int64_t{p.rank()});
          ids.push_back(s.context());
          ids.push_back(t.context());
          last = t;
        }
        std::sort(ids.begin(), ids.end());
        SY_CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end(), "two communicators share a context id");
        co_await check_collectives(last, 21);
      },
      options());
}

// Library duplicates of a communicator across nodes, made without
// communication, up to the limit of live communicators: all distinct, and
// named alike on every node (every node's ids, gathered, are the same), and
// messages between nodes land on the one they were sent on. "lib28413" and
// "lib28772" took one id when ids were hashed into 31 bits (the job failed
// with "would take the id ... of communicator ...'s sibling").
TEST(MpiCommunicators, LibraryDuplicatesAcrossNodesAreDistinctUpToTheLimit) {
  Runtime& rt = runtime();
  const auto limit = static_cast<std::size_t>(detail::GroupRegistry::kMaxContexts);
  const Rank n = 2 * rt.nodes();
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        std::vector<ContextId> ids{p.world().context()};
        for (std::size_t i = 1; i < limit; ++i) {
          ids.push_back(p.world().library(LibraryKey("lib" + std::to_string(i))).context());
        }
        std::uint64_t named = 0;  // in the order of the keys, so equal only where every id is
        for (ContextId id : ids) named = splitmix64(named ^ id);
        for (std::uint64_t other : co_await p.world().allgather_value(named)) {
          SY_CHECK(other == named, "rank " << p.rank() << ": another node named its library duplicates otherwise");
        }
        std::sort(ids.begin(), ids.end());
        SY_CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end(), "two communicators share a context id");
        // The same tag on both, to the next node: each message on its own communicator.
        const Rank to = (p.rank() + 2) % n, from = (p.rank() + n - 2) % n;
        const Communicator a = p.world().library(LibraryKey("lib28413")), b = p.world().library(LibraryKey("lib28772"));
        co_await b.send(to, pattern(16, message_key(p.rank(), to, 2)), 4);
        co_await a.send(to, pattern(24, message_key(p.rank(), to, 1)), 4);
        check_message(co_await a.recv(from, 4), from, p.rank(), 1, 24, "on lib28413");
        check_message(co_await b.recv(from, 4), from, p.rank(), 2, 16, "on lib28772");
      },
      options());
}

// Freed ids are given back and used again, across nodes: more communicators
// than the limit made and freed in a loop (a dup with its library duplicate,
// and a 2-way split across the nodes), each carrying messages between nodes
// and an active message before it is freed; the ids in use stay few.
TEST(MpiCollectives, FreedIdsAreReusedAcrossNodes) {
  Runtime& rt = runtime();
  const auto limit = static_cast<std::size_t>(detail::GroupRegistry::kMaxContexts);
  constexpr HandlerId kTouch = 5;
  std::atomic<std::uint64_t> touched{0};
  RunOptions o = options();
  o.on_active_message(kTouch, [&](Process&, Rank, std::span<const std::byte>) { touched.fetch_add(1); });
  const Rank n = 2 * rt.nodes();
  const std::size_t rounds = limit / 3 + 8;  // three communicators a round
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        std::set<ContextId> ids;
        for (std::size_t i = 0; i < rounds; ++i) {
          // The dup's ring and active messages go to the next node (blocks of two ranks).
          for (ContextId id : co_await sytest::make_use_and_free(p, i, 2, kTouch)) ids.insert(id);
        }
        SY_CHECK(ids.size() < 32, ids.size() << " ids in use for " << 3 * rounds << " communicators");
      },
      o);
  EXPECT_EQ(touched.load(), 2 * rounds) << "the handlers of this node, run before each free";
}

// A process of node 1 throws while the others wait for it (a receive, a
// barrier): run() rethrows the original there, every other node's run() throws
// a RemoteFailure naming node 1 and the rank, within 5 s; the next job runs.
TEST(MpiFailure, AThrowOnNodeOneEndsTheJobOnEveryNode) {
  Runtime& rt = runtime();
  const Rank n = 2 * rt.nodes();
  const Rank thrower = rt.nodes() > 1 ? 2 : 1;  // node 1's first rank (blocks of two)
  const JobFailure e = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        if (p.rank() == thrower) throw std::runtime_error("boom from rank " + std::to_string(p.rank()));
        if (p.rank() % 2 == 0) {
          co_await p.recv(thrower, 9);  // never sent
        } else {
          co_await p.barrier();  // never complete
        }
      },
      options());
  EXPECT_LT(e.took, std::chrono::seconds(5));
  const bool failing_node = rt.nodes() == 1 || rt.node() == 1;
  EXPECT_EQ(e.kind, failing_node ? JobFailure::kOriginal : JobFailure::kRemote) << e.error;
  if (failing_node) {
    EXPECT_EQ(e.error, "boom from rank " + std::to_string(thrower));
  } else {
    EXPECT_NE(e.error.find("node 1"), std::string::npos) << e.error;
    EXPECT_NE(e.error.find("rank " + std::to_string(thrower)), std::string::npos) << e.error;
    EXPECT_NE(e.error.find("boom"), std::string::npos) << e.error;
  }
  // The runtime runs the next job across the same nodes.
  rt.run(
      n, [&](Process& p) -> Task<void> { co_await check_collectives(p.world(), 1); }, options());
}

// An active message on a library duplicate that the receiver's node never
// made (library() is made where it is asked for): it used to dereference a
// null communicator there. Now that node keeps it while its processes run (an
// active message on a dup or split that overtakes the receiving node's own
// call runs once the call is made) and, if the job ends without the
// communicator made, drops it with the job as a message nobody received
// (an UnreceivedMessagesError with RunOptions::strict, on that node).
TEST(MpiFailure, AnActiveMessageOnACommunicatorItsNodeNeverMadeIsUnreceived) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << "needs 2 nodes (one node shares the sender's communicator)";
  constexpr HandlerId kLost = 6;
  RunOptions o = options();
  o.strict = true;
  o.on_active_message(kLost, [](Process&, Rank, std::span<const std::byte>) {});
  std::string error;
  try {
    rt.run(
        2 * rt.nodes(),
        [&](Process& p) -> Task<void> {
          if (p.rank() == 0) p.world().library(LibraryKey("asked on node 0 only")).post_active(2, kLost, {});
          co_return;
        },
        o);
  } catch (const UnreceivedMessagesError& e) {
    error = e.what();
  }
  if (rt.node() == 1) {
    EXPECT_NE(error.find("1 message(s) that no process received on node 1"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 0 to rank 2, 0 bytes, tag 6 on communicator"), std::string::npos) << error;
  } else {
    EXPECT_EQ(error, "");
  }
  rt.run(
      2 * rt.nodes(), [&](Process& p) -> Task<void> { co_await check_collectives(p.world(), 1); }, options());
}

// Unreceived messages counted every time, across nodes: ranks 0 (node 0) and 3 (node 1) send 8
// bytes each to rank 2 (node 1, on another core than rank 3), which ends
// without receiving; the job may end while they are in flight between the
// nodes, or in node 1's ring between the two cores. Node 1 counts both in
// every job, and throws with strict in every job; the others count none.
TEST(MpiFailure, MessagesNeverReceivedAreCountedEveryTime) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << "needs 2 nodes";
  const Rank n = 2 * rt.nodes(), receiver = 2;  // 2 a node: ranks 2 and 3 are node 1's
  auto body = [&](Process& p) -> Task<void> {
    const std::byte word[8]{};
    if (p.rank() == 0 || p.rank() == 3) co_await p.send(receiver, word, 4);
  };
  constexpr int kJobs = 100;
  const std::uint64_t expected = rt.node() == 1 ? 2 : 0;
  int counted = 0, thrown = 0;
  RunOptions o = options();
  testing::internal::CaptureStderr();
  for (int k = 0; k < kJobs; ++k) counted += rt.run(n, body, o).unreceived == expected;
  (void)testing::internal::GetCapturedStderr();
  o.strict = true;
  for (int k = 0; k < kJobs; ++k) {
    try {
      rt.run(n, body, o);
    } catch (const UnreceivedMessagesError& e) {
      thrown +=
          std::string(e.what()).find("ended with 2 message(s) that no process received on node 1") != std::string::npos;
    }
  }
  EXPECT_EQ(counted, kJobs);
  EXPECT_EQ(thrown, expected ? kJobs : 0);
}

// Nodes that disagree on a job's size: node 0 runs a job of 8 processes, the others one of 6.
// They used to end after the stall timeout with "node 1 stalled"; now every
// node throws at the job's start, naming each node's size, and the next job
// (alike on every node) runs.
TEST(MpiFailure, NodesThatDisagreeOnAJobsSizeAreToldAtOnce) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << "needs 2 nodes";
  const Rank mine = rt.node() == 0 ? 8 : 6;
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    rt.run(
        mine, [](Process&) -> Task<void> { co_return; }, options());
  } catch (const InvalidArgument& e) {
    error = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(error.find("the nodes disagree on the job"), std::string::npos) << error;
  EXPECT_NE(error.find("node 0 runs a job of 8 processes, node 1 one of 6 processes"), std::string::npos) << error;
  rt.run(
      2 * rt.nodes(), [&](Process& p) -> Task<void> { co_await check_collectives(p.world(), 1); }, options());
}

// A process of node 1 waits for a message nobody sends while every other
// process finishes: node 1's watchdog names it (StallError), every other node
// fails with a RemoteFailure naming node 1 (not a stall of its own, although
// its processes finished long before).
TEST(MpiFailure, AStallOnNodeOneIsReportedOnEveryNode) {
  Runtime& rt = runtime();
  const Rank n = 2 * rt.nodes();
  const Rank waiter = rt.nodes() > 1 ? 2 : 1;
  RunOptions o = options();
  o.stall_timeout = std::chrono::milliseconds(400);
  const JobFailure e = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        if (p.rank() == waiter) co_await p.recv(waiter, 3);  // never sent
      },
      o);
  EXPECT_LT(e.took, std::chrono::seconds(5));
  const bool stalled_node = rt.nodes() == 1 || rt.node() == 1;
  EXPECT_EQ(e.kind, stalled_node ? JobFailure::kStall : JobFailure::kRemote) << e.error;
  if (stalled_node) {
    EXPECT_NE(e.error.find("rank " + std::to_string(waiter)), std::string::npos) << e.error;
  } else {
    EXPECT_NE(e.error.find("node 1 stalled"), std::string::npos) << e.error;
  }
}

// A message to another node that its receiver never takes (the receiver
// finished): the job ends on every node with an error, not MPI_Abort or a
// hang. The sender waits for the send: its node's watchdog names it. The
// sender lets go of the send's ticket without waiting: that fails the job at
// once, naming the send (a dropped ticket is never silent). Every
// other node fails with a RemoteFailure naming node 0.
class MpiNeverReceived : public ::testing::TestWithParam<bool> {};

TEST_P(MpiNeverReceived, EndsWithAnErrorOnEveryNode) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << "needs 2 nodes (on one node a send nobody waits for ends with the job)";
  const bool sender_waits = GetParam();
  const Rank n = 2 * rt.nodes();
  RunOptions o = options();
  o.stall_timeout = std::chrono::milliseconds(400);
  static const std::vector<std::byte> kept = pattern(1 << 20, message_key(0, 2, 3));
  const JobFailure e = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        if (p.rank() != 0) co_return;  // rank 2 (node 1) never receives
        if (sender_waits) {
          const std::vector<std::byte> mine = kept;
          co_await p.send(2, mine, 4);
        } else {
          SendTicket t = p.post_send(2, kept, 4);
        }
      },
      o);
  EXPECT_LT(e.took, std::chrono::seconds(5));
  const auto on_node0 = sender_waits ? JobFailure::kStall : JobFailure::kOriginal;
  EXPECT_EQ(e.kind, rt.node() == 0 ? on_node0 : JobFailure::kRemote) << e.error;
  if (rt.node() != 0) {
    EXPECT_NE(e.error.find(sender_waits ? "node 0 stalled" : "node 0 failed (rank 0)"), std::string::npos) << e.error;
  } else if (sender_waits) {
    EXPECT_NE(e.error.find("rank 0"), std::string::npos) << e.error;
    EXPECT_NE(e.error.find("its send to rank 2"), std::string::npos) << e.error;
  } else {
    EXPECT_NE(e.error.find("rank 0 let go of the ticket of its send to rank 2 (1048576 bytes, tag 4)"),
              std::string::npos)
        << e.error;
  }
  rt.run(
      n, [&](Process& p) -> Task<void> { co_await check_collectives(p.world(), 3); }, options());
}

INSTANTIATE_TEST_SUITE_P(Sender, MpiNeverReceived, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Waits" : "Finishes"; });

// A process throws past a payload of 4 MiB it sent to another node (an
// MPI_Issend reading its buffer, never received): the unwinding waits until
// the other node, cancelled, has taken it in and dropped it, before the
// buffer goes (before: MPI read the freed buffer, and node 0 died of
// SIGSEGV). The thrower's error on node 0, a RemoteFailure naming it on the others.
TEST(MpiFailure, AThrowPastAPayloadInFlightWaitsUntilItMoved) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << "needs 2 nodes";
  const Rank n = 2 * rt.nodes();
  const JobFailure e = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        if (p.rank() != 0) co_return;
        const std::vector<std::byte> mine = pattern(4 << 20, message_key(0, 2, 5));
        SendTicket t = p.post_send(2, mine, 6);
        co_await p.sleep_for(std::chrono::milliseconds(2));  // the header reaches node 1 meanwhile
        throw std::runtime_error("boom past a payload");
      },
      options());
  EXPECT_LT(e.took, std::chrono::seconds(5));
  EXPECT_EQ(e.kind, rt.node() == 0 ? JobFailure::kOriginal : JobFailure::kRemote) << e.error;
  EXPECT_NE(e.error.find("boom past a payload"), std::string::npos) << e.error;
  if (rt.node() != 0) {
    EXPECT_NE(e.error.find("node 0 failed (rank 0)"), std::string::npos) << e.error;
  }
  rt.run(
      n, [&](Process& p) -> Task<void> { co_await check_collectives(p.world(), 4); }, options());
}

// The last resort: a cancelled job whose traffic cannot finish within the
// grace period (rank 2 on node 1 holds its core for 6 s without yielding, so
// node 1 never takes its part of the cancellation) ends every node with
// MPI_Abort and a diagnostic. Run only by the ctest mpi.abort_fallback.np2
// (SWITCHYARD_TEST_MPI_ABORT=1), which expects the non-zero exit; skipped otherwise.
TEST(MpiAbort, ACancelledJobThatCannotFinishAbortsEveryNode) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1 || !std::getenv("SWITCHYARD_TEST_MPI_ABORT")) {
    GTEST_SKIP() << "run by ctest mpi.abort_fallback (ends the program with MPI_Abort)";
  }
  rt.run(
      2 * rt.nodes(),
      [&](Process& p) -> Task<void> {
        if (p.rank() == 0) throw std::runtime_error("boom before the abort");
        if (p.rank() == 2) std::this_thread::sleep_for(std::chrono::seconds(6));  // never yields
        co_await p.barrier();
      },
      options());
  ADD_FAILURE() << "the job returned; MPI_Abort should have ended the program";
}

// A node that never calls run: the others wait for it at the job's start
// (the nodes compare the job's size) for the stall timeout, then end every
// node with MPI_Abort, saying that a node did not start the job, not only
// "could not finish its traffic".
TEST(MpiAbort, AStalledNodeSaysWhatItWaitedForBeforeTheAbort) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1 || !std::getenv("SWITCHYARD_TEST_MPI_ABORT")) {
    GTEST_SKIP() << "run by ctest mpi.stall_diagnosis (ends the program with MPI_Abort)";
  }
  if (rt.node() == rt.nodes() - 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // never calls run; MPI_Abort ends it
    ADD_FAILURE() << "MPI_Abort did not end the node that never ran";
    return;
  }
  RunOptions o = options();
  o.stall_timeout = std::chrono::milliseconds(1000);
  rt.run(
      2 * rt.nodes(), [&](Process& p) -> Task<void> { co_await p.barrier(); }, o);
  ADD_FAILURE() << "the job returned; MPI_Abort should have ended the program";
}

}  // namespace
