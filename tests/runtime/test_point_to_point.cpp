// Point-to-point messaging: random traffic with every byte verified, the three
// protocols (inline, eager multi-packet, single-copy), same-core and cross-core
// pairs, one-slot rings, any-source receives, tags, non-blocking tickets,
// errors, and one message larger than 2 GiB.
//
// Every payload is derived from (source, destination, sequence, tag), and every
// receiver knows the plan, so a lost, duplicated, reordered or corrupted message
// shows up as a wrong size, a wrong source or a wrong byte.

#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <tuple>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using sytest::check_message;
using sytest::message_key;
using sytest::pattern;

struct Planned {
  Rank src, dst;
  Tag tag;
  std::uint64_t seq;  // index among the messages from src to dst
  std::uint32_t size;
};

std::uint32_t random_size(std::mt19937_64& rng, std::uint64_t eager_limit) {
  const std::uint64_t kind = rng() % 20;
  if (kind < 7) return static_cast<std::uint32_t>(rng() % 33);  // inline: 0..32 bytes, one packet
  if (kind < 14) {  // eager: more packets
    const std::uint64_t lo = std::min<std::uint64_t>(33, eager_limit);
    return static_cast<std::uint32_t>(lo + rng() % (eager_limit - lo + 1));
  }
  return static_cast<std::uint32_t>(eager_limit + 1 + rng() % (3 * eager_limit + 5000));  // single-copy
}

enum class Traffic {
  kPostedPerSource,  // post every send, post every receive per (source, tag), wait in random order
  kAnySource,  // post every send, then blocking recv(kAnySource, tag)
  kBlockingPhases,  // blocking sends and receives: evens send to odds, then odds to evens
};

void PrintTo(Traffic t, std::ostream* os) {
  const char* names[] = {"posted-per-source", "any-source", "blocking-phases"};
  *os << names[static_cast<int>(t)];
}

struct TrafficOptions {
  std::uint64_t n = 2;
  std::uint64_t seed = 1;
  std::uint32_t per_process = 8;  // messages each process sends
  Traffic traffic = Traffic::kPostedPerSource;
  Placement placement = Placement::round_robin();
  std::size_t ring_capacity = 1024;
  std::uint64_t eager_limit = 1024;
  std::uint32_t tags = 3;
};

// Every message sent and every message received, counted by the processes.
struct Totals {
  std::atomic<std::uint64_t> sent{0}, received{0}, bytes{0}, cross_core{0}, same_core{0};
};

std::vector<Planned> make_plan(const TrafficOptions& o) {
  std::mt19937_64 rng(o.seed);
  const Rank n = static_cast<Rank>(o.n);
  std::vector<Planned> plan;
  std::map<std::pair<Rank, Rank>, std::uint64_t> pair_seq;
  for (Rank src = 0; src < n; ++src) {
    for (std::uint32_t k = 0; k < o.per_process; ++k) {
      Rank dst;
      Tag tag = static_cast<Tag>(rng() % o.tags);
      if (o.traffic == Traffic::kBlockingPhases) {
        // Evens send to odds (tag 0) and odds to evens (tag 1).
        const Rank parity = (src % 2) ^ 1;
        const Rank candidates = n / 2 + (parity == 0 ? n % 2 : 0);
        if (candidates == 0) break;
        dst = static_cast<Rank>(2 * (rng() % candidates) + parity);
        tag = src % 2;
      } else {
        dst = static_cast<Rank>(rng() % n);
      }
      const std::uint32_t size = random_size(rng, o.eager_limit);
      plan.push_back(Planned{src, dst, tag, pair_seq[{src, dst}]++, size});
    }
  }
  return plan;
}

void check_payload(std::span<const std::byte> got, const Planned& m) {
  SY_CHECK(got.size() == m.size, "message " << m.seq << " from " << m.src << " to " << m.dst << ": size " << got.size()
                                            << ", expected " << m.size);
  const std::size_t bad = sytest::first_mismatch(got, message_key(m.src, m.dst, m.seq, m.tag));
  SY_CHECK(bad == std::string::npos, "message " << m.seq << " from " << m.src << " to " << m.dst << " (tag " << m.tag
                                                << ", " << m.size << " bytes): wrong byte at offset " << bad);
}

void run_traffic(Runtime& rt, const TrafficOptions& o) {
  const std::vector<Planned> plan = make_plan(o);
  const Rank n = static_cast<Rank>(o.n);
  std::vector<std::vector<const Planned*>> outbox(n), inbox(n);
  for (const auto& m : plan) {
    outbox[m.src].push_back(&m);
    inbox[m.dst].push_back(&m);
  }
  Totals totals;
  RunOptions opts;
  opts.placement = o.placement;
  opts.ring_capacity = o.ring_capacity;
  opts.eager_limit = o.eager_limit;
  const std::vector<std::uint32_t> worker_of = o.placement.assign(o.n, rt.cores());

  auto body = [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    std::mt19937_64 rng(sytest::mix(o.seed, me));
    // Streams this process receives, in send order: (src, tag) -> messages.
    std::map<std::pair<Rank, Tag>, std::vector<const Planned*>> streams;
    for (const Planned* m : inbox[me]) streams[{m->src, m->tag}].push_back(m);
    std::vector<std::vector<std::byte>> payloads;
    payloads.reserve(outbox[me].size());
    for (const Planned* m : outbox[me])
      payloads.push_back(pattern(m->size, message_key(m->src, m->dst, m->seq, m->tag)));
    auto count_sent = [&](const Planned& m) {
      totals.sent.fetch_add(1, std::memory_order_relaxed);
      (worker_of[m.src] == worker_of[m.dst] ? totals.same_core : totals.cross_core)
          .fetch_add(1, std::memory_order_relaxed);
    };
    auto count_received = [&](const Planned& m) {
      totals.received.fetch_add(1, std::memory_order_relaxed);
      totals.bytes.fetch_add(m.size, std::memory_order_relaxed);
    };

    if (o.traffic == Traffic::kPostedPerSource) {
      std::vector<SendTicket> sends;
      for (std::size_t i = 0; i < outbox[me].size(); ++i) {
        const Planned& m = *outbox[me][i];
        sends.push_back(p.post_send(m.dst, payloads[i], m.tag));
        count_sent(m);
      }
      // Post the receives: per stream in order, streams interleaved at random.
      std::vector<std::pair<Rank, Tag>> order;
      for (auto& [key, msgs] : streams) order.insert(order.end(), msgs.size(), key);
      std::shuffle(order.begin(), order.end(), rng);
      std::map<std::pair<Rank, Tag>, std::size_t> next;
      struct Posted {
        RecvTicket ticket;
        const Planned* m;
        std::vector<std::byte> buffer;  // for post_recv_into; slack filled with a sentinel
        bool into;
      };
      std::vector<Posted> recvs;
      recvs.reserve(order.size());
      for (const auto& key : order) {
        const Planned* m = streams[key][next[key]++];
        Posted& r = recvs.emplace_back(Posted{RecvTicket{}, m, {}, (m->seq + m->src) % 2 == 0});
        if (r.into) {
          r.buffer.assign(m->size + (m->seq % 3 == 0 ? 17 : 0), std::byte{0xA5});
          r.ticket = p.post_recv_into(key.first, r.buffer, key.second);
        } else {
          r.ticket = p.post_recv(key.first, key.second);
        }
      }
      std::vector<std::size_t> wait_order(recvs.size());
      for (std::size_t i = 0; i < wait_order.size(); ++i) wait_order[i] = i;
      std::shuffle(wait_order.begin(), wait_order.end(), rng);
      for (std::size_t i : wait_order) {
        Posted& r = recvs[i];
        if (i % 3 == 0) {
          while (!p.test(r.ticket)) co_await p.yield();
        } else {
          co_await p.wait(r.ticket);
        }
        SY_CHECK(r.ticket.done(), "ticket not done after wait");
        SY_CHECK(r.ticket.source() == r.m->src, "source " << r.ticket.source() << ", expected " << r.m->src);
        SY_CHECK(r.ticket.size() == r.m->size, "size " << r.ticket.size() << ", expected " << r.m->size);
        if (r.into) {
          check_payload(std::span<const std::byte>(r.buffer).first(r.m->size), *r.m);
          for (std::size_t b = r.m->size; b < r.buffer.size(); ++b) {
            SY_CHECK(r.buffer[b] == std::byte{0xA5}, "recv_into wrote past the message, at offset " << b);
          }
        } else {
          Message msg = r.ticket.take_message();
          SY_CHECK(msg.source() == r.m->src && msg.tag() == r.m->tag,
                   "message header " << msg.source() << "/" << msg.tag());
          check_payload(msg.bytes(), *r.m);
        }
        count_received(*r.m);
      }
      for (auto& t : sends) {
        co_await p.wait(t);
        SY_CHECK(p.test(t), "send not complete after wait");
      }
    } else if (o.traffic == Traffic::kAnySource) {
      std::vector<SendTicket> sends;
      for (std::size_t i = 0; i < outbox[me].size(); ++i) {
        const Planned& m = *outbox[me][i];
        sends.push_back(p.post_send(m.dst, payloads[i], m.tag));
        count_sent(m);
      }
      std::map<std::pair<Rank, Tag>, std::size_t> next;
      for (Tag tag = 0; tag < o.tags; ++tag) {
        std::size_t expected = 0;
        for (auto& [key, msgs] : streams) expected += key.second == tag ? msgs.size() : 0;
        for (std::size_t k = 0; k < expected; ++k) {
          Message msg = co_await p.recv(kAnySource, tag);
          SY_CHECK(msg.tag() == tag, "tag " << msg.tag() << " from a receive of tag " << tag);
          auto it = streams.find({msg.source(), tag});
          SY_CHECK(it != streams.end(), "rank " << me << " got an unplanned message from " << msg.source());
          std::size_t& i = next[{msg.source(), tag}];
          SY_CHECK(i < it->second.size(), "rank " << me << " got one message too many from " << msg.source());
          check_payload(msg.bytes(), *it->second[i++]);  // the next one of this stream, in order
          count_received(*it->second[i - 1]);
        }
      }
      for (auto& t : sends) co_await p.wait(t);
    } else {
      // Blocking phases: a process only sends, then only receives (or the other way round).
      auto send_all = [&]() -> Task<void> {
        for (std::size_t i = 0; i < outbox[me].size(); ++i) {
          const Planned& m = *outbox[me][i];
          co_await p.send(m.dst, payloads[i], m.tag);
          count_sent(m);
        }
      };
      auto receive_all = [&]() -> Task<void> {
        std::map<Rank, std::size_t> next;
        std::uint32_t max_size = 0;
        for (const Planned* m : inbox[me]) max_size = std::max(max_size, m->size);
        std::vector<std::byte> buffer(max_size + 64);
        const Tag tag = (me % 2) ^ 1;
        for (std::size_t k = 0; k < inbox[me].size(); ++k) {
          Rank src;
          std::span<const std::byte> got;
          Message msg;
          if (k % 2 == 0) {
            msg = co_await p.recv(kAnySource, tag);
            src = msg.source();
            got = msg.bytes();
          } else {
            RecvTicket t = p.post_recv_into(kAnySource, buffer, tag);
            co_await p.wait(t);
            src = t.source();
            got = std::span<const std::byte>(buffer).first(t.size());
          }
          auto it = streams.find({src, tag});
          SY_CHECK(it != streams.end(), "rank " << me << " got an unplanned message from " << src);
          std::size_t& i = next[src];
          SY_CHECK(i < it->second.size(), "rank " << me << " got one message too many from " << src);
          check_payload(got, *it->second[i++]);
          count_received(*it->second[i - 1]);
        }
      };
      if (me % 2 == 0) {
        co_await send_all();
        co_await receive_all();
      } else {
        co_await receive_all();
        co_await send_all();
      }
    }
  };
  rt.run(o.n, body, opts);
  EXPECT_EQ(totals.sent.load(), plan.size());
  EXPECT_EQ(totals.received.load(), plan.size());
  std::uint64_t bytes = 0, cross = 0;
  for (const auto& m : plan) {
    bytes += m.size;
    cross += worker_of[m.src] != worker_of[m.dst];
  }
  EXPECT_EQ(totals.bytes.load(), bytes);
  EXPECT_EQ(totals.cross_core.load(), cross);
}

class RandomTraffic : public ::testing::TestWithParam<std::tuple<std::uint64_t, Traffic>> {};

TEST_P(RandomTraffic, EveryByteArrivesOnceAndInOrder) {
  const auto [n, traffic] = GetParam();
  Runtime rt;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    TrafficOptions o;
    o.n = n;
    o.seed = seed * 1000 + n;
    o.traffic = traffic;
    o.per_process = n >= 1024 ? 8 : n >= 32 ? 30 : 150;
    if (seed == 1) {
      o.placement = Placement::round_robin();
    } else if (seed == 2) {
      o.placement = Placement::block();
    } else {
      std::vector<int> map(n);
      for (std::uint64_t r = 0; r < n; ++r) map[r] = rt.cores()[sytest::mix(seed, r) % rt.cores().size()];
      o.placement = Placement::explicit_map(map);
    }
    SCOPED_TRACE("seed " + std::to_string(o.seed));
    run_traffic(rt, o);
  }
}

std::string traffic_name(const ::testing::TestParamInfo<std::tuple<std::uint64_t, Traffic>>& info) {
  const char* names[] = {"Posted", "AnySource", "Blocking"};
  return names[static_cast<int>(std::get<1>(info.param))] + std::string("_n") + std::to_string(std::get<0>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Sizes, RandomTraffic,
                         ::testing::Combine(::testing::Values(1u, 2u, 3u, 32u, 1024u, 4096u),
                                            ::testing::Values(Traffic::kPostedPerSource, Traffic::kAnySource,
                                                              Traffic::kBlockingPhases)),
                         traffic_name);

TEST(PointToPoint, RandomTrafficCoversSameCoreAndCrossCorePairs) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  TrafficOptions o;
  o.n = 32;
  o.seed = 77;
  o.per_process = 20;
  const auto plan = make_plan(o);
  const auto workers = o.placement.assign(o.n, rt.cores());
  std::uint64_t same = 0, cross = 0, inline_n = 0, eager_n = 0, single_n = 0;
  for (const auto& m : plan) {
    (workers[m.src] == workers[m.dst] ? same : cross)++;
    (m.size <= 32 ? inline_n : m.size <= o.eager_limit ? eager_n : single_n)++;
  }
  EXPECT_GT(same, 50u);
  EXPECT_GT(cross, 50u);
  EXPECT_GT(inline_n, 50u);
  EXPECT_GT(eager_n, 50u);
  EXPECT_GT(single_n, 50u);
  run_traffic(rt, o);
}

TEST(PointToPoint, RandomExplicitPlacement) {
  Runtime rt;
  for (Traffic t : {Traffic::kPostedPerSource, Traffic::kBlockingPhases}) {
    TrafficOptions o;
    o.n = 300;
    o.seed = 4242;
    o.per_process = 10;
    o.traffic = t;
    std::vector<int> map(o.n);
    for (std::uint64_t r = 0; r < o.n; ++r) map[r] = rt.cores()[sytest::splitmix64(r + 9) % rt.cores().size()];
    o.placement = Placement::explicit_map(map);
    run_traffic(rt, o);
  }
}

TEST(PointToPoint, RingCapacityOneCompletesEverything) {
  Runtime rt;
  for (std::uint64_t n : {2u, 32u, 1024u}) {
    for (Traffic t : {Traffic::kPostedPerSource, Traffic::kAnySource, Traffic::kBlockingPhases}) {
      TrafficOptions o;
      o.n = n;
      o.seed = 99 + n;
      o.traffic = t;
      o.ring_capacity = 1;
      o.per_process = n >= 1024 ? 4 : 20;
      SCOPED_TRACE("n=" + std::to_string(n) + " traffic " + std::to_string(static_cast<int>(t)));
      run_traffic(rt, o);
    }
  }
}

TEST(PointToPoint, EagerLimitVariants) {
  Runtime rt;
  for (std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{32}, std::uint64_t{100}, std::uint64_t{1} << 16}) {
    for (std::size_t cap : {std::size_t{1}, std::size_t{3}, std::size_t{1024}}) {
      TrafficOptions o;
      o.n = 16;
      o.seed = limit + cap;
      o.per_process = limit > 4096 ? 6 : 20;
      o.eager_limit = limit;
      o.ring_capacity = cap;
      SCOPED_TRACE("eager_limit " + std::to_string(limit) + " capacity " + std::to_string(cap));
      run_traffic(rt, o);
    }
  }
}

// Sizes right at the protocol boundaries, in both directions, same core and cross core.
void boundary_ping_pong(Runtime& rt, std::uint64_t eager_limit, std::size_t capacity, Placement placement) {
  std::vector<std::uint64_t> sizes{0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 95, 96, 97, 1000, 4096};
  for (std::uint64_t d : {eager_limit, eager_limit + 1}) {
    if (d >= 1) sizes.push_back(d - 1);
    sizes.push_back(d);
  }
  sizes.push_back(2 * eager_limit + 3);
  sizes.push_back(300'000);
  RunOptions opts;
  opts.placement = std::move(placement);
  opts.eager_limit = eager_limit;
  opts.ring_capacity = capacity;
  std::atomic<int> verified{0};
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        const Rank peer = 1 - p.rank();
        for (std::size_t i = 0; i < sizes.size(); ++i) {
          const std::uint64_t size = sizes[i];
          if (p.rank() == 0) {
            const auto out = pattern(size, message_key(0, 1, i));
            co_await p.send(1, out);
            Message back = co_await p.recv(1);
            SY_CHECK(back.source() == 1u, "source");
            check_payload(back.bytes(), Planned{1, 0, 0, i, static_cast<std::uint32_t>(size)});
          } else {
            Message m = co_await p.recv(0);
            check_payload(m.bytes(), Planned{0, 1, 0, i, static_cast<std::uint32_t>(size)});
            const auto out = pattern(size, message_key(1, 0, i));
            co_await p.send(peer, out);
          }
          verified.fetch_add(1);
        }
      },
      opts);
  EXPECT_EQ(verified.load(), static_cast<int>(2 * sizes.size()));
}

TEST(PointToPoint, ProtocolBoundariesSameAndCrossCore) {
  Runtime rt;
  const int a = rt.cores().front(), b = rt.cores().back();
  for (std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{32}, std::uint64_t{1024}, std::uint64_t{1} << 20}) {
    for (std::size_t cap : {std::size_t{1}, std::size_t{1024}}) {
      SCOPED_TRACE("eager_limit " + std::to_string(limit) + " capacity " + std::to_string(cap));
      boundary_ping_pong(rt, limit, cap, Placement::explicit_map({a, b}));
      boundary_ping_pong(rt, limit, cap, Placement::explicit_map({a, a}));
      boundary_ping_pong(rt, limit, cap, Placement::explicit_map({b, b}));
    }
  }
}

TEST(PointToPoint, MaximalEagerMessagesThroughAOneSlotRing) {
  // 1 MiB eager messages are 16385 packets each; with a one-slot ring every one
  // of them waits for the receiver to drain the previous one.
  Runtime rt;
  RunOptions opts;
  opts.eager_limit = std::uint64_t{1} << 20;
  opts.ring_capacity = 1;
  const int count = sytest::kSanitized ? 3 : 10;
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        if (p.rank() == 0) {
          std::vector<std::vector<std::byte>> out;
          std::vector<SendTicket> tickets;
          for (int i = 0; i < count; ++i) out.push_back(pattern(opts.eager_limit - i, message_key(0, 1, i)));
          for (int i = 0; i < count; ++i) tickets.push_back(p.post_send(1, out[i]));
          for (auto& t : tickets) co_await p.wait(t);
        } else {
          for (int i = 0; i < count; ++i) {
            Message m = co_await p.recv(0);
            check_payload(m.bytes(), Planned{0, 1, 0, static_cast<std::uint64_t>(i),
                                             static_cast<std::uint32_t>(opts.eager_limit - i)});
          }
        }
      },
      opts);
}

TEST(PointToPoint, AnySourceGetsEveryoneExactlyOnce) {
  Runtime rt;
  for (std::uint64_t n : {2u, 3u, 32u, 1024u}) {
    std::vector<int> got(n, 0);
    rt.run(n, [&](Process& p) -> Task<void> {
      if (p.rank() != 0) {
        const auto out = pattern(p.rank() % 100, message_key(p.rank(), 0, 0));
        co_await p.send(0, out);
        co_return;
      }
      for (Rank k = 1; k < p.size(); ++k) {
        Message m = co_await p.recv(kAnySource);
        SY_CHECK(m.source() > 0 && m.source() < p.size(), "source " << m.source());
        check_payload(m.bytes(), Planned{m.source(), 0, 0, 0, m.source() % 100});
        ++got[m.source()];
      }
    });
    for (Rank r = 1; r < n; ++r) ASSERT_EQ(got[r], 1) << "n=" << n << " rank " << r;
  }
}

TEST(PointToPoint, TagsKeepStreamsApart) {
  Runtime rt;
  for (auto placement : {Placement::round_robin(), Placement::explicit_map({rt.cores()[0], rt.cores()[0]})}) {
    RunOptions opts;
    opts.placement = placement;
    const int per_tag = 20;
    const Tag tags[] = {0, 1, 77, kFirstReservedTag - 1};
    rt.run(
        2,
        [&](Process& p) -> Task<void> {
          if (p.rank() == 0) {
            std::vector<std::vector<std::byte>> bufs;
            std::vector<SendTicket> tickets;
            for (int i = 0; i < per_tag; ++i) {
              for (Tag t : tags) {
                // Sizes differ per tag so that a mix-up is also a size error.
                bufs.push_back(pattern(10 + t % 1000 + i * 37, message_key(0, 1, i, t)));
                tickets.push_back(p.post_send(1, bufs.back(), t));
              }
            }
            for (auto& t : tickets) co_await p.wait(t);
          } else {
            // Drain the tags in reverse order of sending.
            for (int k = 3; k >= 0; --k) {
              for (int i = 0; i < per_tag; ++i) {
                Message m = co_await p.recv(k % 2 ? 0 : kAnySource, tags[k]);
                SY_CHECK(m.tag() == tags[k], "tag " << m.tag());
                check_payload(m.bytes(), Planned{0, 1, tags[k], static_cast<std::uint64_t>(i),
                                                 static_cast<std::uint32_t>(10 + tags[k] % 1000 + i * 37)});
              }
            }
          }
        },
        opts);
  }
}

TEST(PointToPoint, ReservedTagsAndBadRanksAreInvalidArgument) {
  Runtime rt;
  auto expect_invalid = [&](std::function<Task<void>(Process&)> op, const char* what) {
    try {
      rt.run(2, [&](Process& p) -> Task<void> {
        if (p.rank() == 0) co_await op(p);
      });
      ADD_FAILURE() << what << ": no error";
    } catch (const InvalidArgument&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": wrong error " << e.what();
    }
  };
  const std::byte b[4]{};
  expect_invalid([&](Process& p) -> Task<void> { co_await p.send(1, b, kFirstReservedTag); }, "send reserved tag");
  expect_invalid([&](Process& p) -> Task<void> { (void)co_await p.recv(1, kFirstReservedTag + 5); },
                 "recv reserved tag");
  expect_invalid([&](Process& p) -> Task<void> { co_await p.send(2, b); }, "send to rank 2 of 2");
  // More than a packet's 48-bit size names (no machine of today maps so much;
  // the span is never read).
  const std::span<const std::byte> huge(b, detail::kMaxMessageBytes + 1);
  expect_invalid([&](Process& p) -> Task<void> { co_await p.send(1, huge); }, "send of 2^48 bytes");
  expect_invalid([&](Process& p) -> Task<void> { co_await p.ssend(1, huge); }, "ssend of 2^48 bytes");
  expect_invalid([&](Process& p) -> Task<void> { (void)co_await p.recv(7); }, "recv from rank 7 of 2");
  expect_invalid(
      [&](Process& p) -> Task<void> {
        std::byte buf[8];
        (void)co_await p.recv_into(1, buf, kFirstReservedTag);
      },
      "recv_into reserved tag");
  expect_invalid(
      [&](Process& p) -> Task<void> {
        SendTicket t;
        co_await p.wait(t);
      },
      "wait on an empty send ticket");
  expect_invalid(
      [&](Process& p) -> Task<void> {
        RecvTicket t;
        (void)p.test(t);
        co_return;
      },
      "test on an empty receive ticket");
}

TEST(PointToPoint, RecvIntoTooSmallBufferIsInvalidArgument) {
  Runtime rt;
  const int a = rt.cores().front(), b = rt.cores().back();
  for (std::uint64_t size : {std::uint64_t{11}, std::uint64_t{100}, std::uint64_t{5000}}) {
    for (auto placement : {Placement::explicit_map({a, b}), Placement::explicit_map({a, a})}) {
      RunOptions opts;
      opts.placement = placement;
      opts.stall_timeout = std::chrono::seconds(20);
      std::vector<std::byte> small(size - 1, std::byte{0x5A});
      try {
        rt.run(
            2,
            [&](Process& p) -> Task<void> {
              if (p.rank() == 0) {
                const auto out = pattern(size, 1);
                co_await p.send(1, out);  // single-copy for 5000: blocks until the receiver takes it in
              } else {
                (void)co_await p.recv_into(0, small);
                throw sytest::CheckFailed("recv_into accepted an oversized message");
              }
            },
            opts);
        ADD_FAILURE() << "no error for a " << size << "-byte message into a " << size - 1 << "-byte buffer";
      } catch (const InvalidArgument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(std::to_string(size) + " bytes"), std::string::npos) << what;
        EXPECT_NE(what.find("does not fit"), std::string::npos) << what;
      }
      for (std::byte x : small) ASSERT_EQ(x, std::byte{0x5A}) << "the too-small buffer was written";
    }
  }
  // The runtime is still usable afterwards.
  std::atomic<int> ok{0};
  rt.run(2, [&](Process& p) -> Task<void> {
    const auto out = pattern(2000, 3);
    if (p.rank() == 0) {
      co_await p.send(1, out);
    } else {
      std::vector<std::byte> buf(2000);
      const std::uint64_t got = co_await p.recv_into(0, buf);
      SY_CHECK(got == 2000 && buf == out, "payload");
      ok.fetch_add(1);
    }
  });
  EXPECT_EQ(ok.load(), 1);
}

TEST(PointToPoint, RecvIntoLargerBufferWritesOnlyTheMessage) {
  Runtime rt;
  for (std::uint64_t size : {0u, 5u, 32u, 33u, 1024u, 1025u, 70000u}) {
    std::atomic<int> ok{0};
    rt.run(2, [&](Process& p) -> Task<void> {
      if (p.rank() == 0) {
        const auto out = pattern(size, message_key(0, 1, size));
        co_await p.send(1, out);
      } else {
        std::vector<std::byte> buf(size + 100, std::byte{0xEE});
        const std::uint64_t got = co_await p.recv_into(0, buf);
        SY_CHECK(got == size, "size " << got);
        check_payload(std::span<const std::byte>(buf).first(size),
                      Planned{0, 1, 0, size, static_cast<std::uint32_t>(size)});
        for (std::size_t i = size; i < buf.size(); ++i) SY_CHECK(buf[i] == std::byte{0xEE}, "byte " << i << " written");
        ok.fetch_add(1);
      }
    });
    EXPECT_EQ(ok.load(), 1) << size;
  }
}

TEST(PointToPoint, NonBlockingTicketsTestAndWait) {
  // Control messages (tags 9..11) order the steps so that every test() result
  // asserted below is determined: a receive cannot be complete before its
  // message was sent, and a single-copy send cannot be complete before its
  // receiver has posted a matching receive.
  Runtime rt;
  const int a = rt.cores().front(), b = rt.cores().back();
  for (auto placement : {Placement::explicit_map({a, b}), Placement::explicit_map({a, a})}) {
    RunOptions opts;
    opts.placement = placement;
    std::atomic<int> checks{0};
    rt.run(
        2,
        [&](Process& p) -> Task<void> {
          const auto big = pattern(50'000, message_key(p.rank(), 1 - p.rank(), 0));  // single-copy
          const auto small = pattern(20, message_key(p.rank(), 1 - p.rank(), 1));
          const std::byte signal{1};
          if (p.rank() == 1) {
            RecvTicket rs = p.post_recv(0, 2);
            SY_CHECK(rs.valid() && !rs.done(), "fresh ticket");
            SY_CHECK(!p.test(rs), "nothing can have arrived: rank 0 waits for our go");
            bool threw = false;
            try {
              (void)rs.source();
            } catch (const InvalidArgument&) {
              threw = true;
            }
            SY_CHECK(threw, "source() before completion must throw");
            co_await p.send(0, std::span(&signal, 1), 9);  // go
            (void)co_await p.recv(0, 10);  // rank 0 has checked its single-copy send
            RecvTicket rb = p.post_recv(0, 1);
            // Poll one, wait for the other.
            while (!p.test(rs)) co_await p.yield();
            SY_CHECK(rs.source() == 0 && rs.size() == 20, "small ticket");
            Message ms = rs.take_message();
            SY_CHECK(ms.source() == 0 && ms.tag() == 2, "small header");
            check_payload(ms.bytes(), Planned{0, 1, 0, 1, 20});
            co_await p.wait(rb);
            SY_CHECK(p.test(rb) && rb.done(), "test after wait");
            SY_CHECK(rb.source() == 0 && rb.size() == 50'000, "big ticket");
            Message mb = rb.take_message();
            check_payload(mb.bytes(), Planned{0, 1, 0, 0, 50'000});
            // And back: rank 0 posts its receive only after our check.
            SendTicket back = p.post_send(0, big, 3);
            SY_CHECK(!p.test(back), "single-copy send complete before its receive was posted");
            co_await p.send(0, std::span(&signal, 1), 11);
            co_await p.wait(back);
            SY_CHECK(p.test(back), "send complete after wait");
            checks.fetch_add(1);
          } else {
            Message go = co_await p.recv(1, 9);
            SY_CHECK(go.size() == 1, "go");
            SendTicket tb = p.post_send(1, big, 1);
            SY_CHECK(tb.valid(), "ticket");
            SY_CHECK(!p.test(tb), "single-copy send complete before its receive was posted");
            SendTicket ts = p.post_send(1, small, 2);
            co_await p.send(1, std::span(&signal, 1), 10);
            co_await p.wait(ts);
            while (!p.test(tb)) co_await p.yield();
            (void)co_await p.recv(1, 11);
            RecvTicket rback = p.post_recv(1, 3);
            co_await p.wait(rback);
            check_payload(rback.take_message().bytes(), Planned{1, 0, 0, 0, 50'000});
            checks.fetch_add(1);
          }
        },
        opts);
    EXPECT_EQ(checks.load(), 2);
  }
}

TEST(PointToPoint, SendToSelf) {
  Runtime rt;
  std::atomic<int> ok{0};
  rt.run(3, [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    std::vector<std::vector<std::byte>> bufs;
    std::vector<SendTicket> tickets;
    const std::uint32_t sizes[] = {0, 32, 900, 40'000};
    for (std::uint32_t i = 0; i < 4; ++i) bufs.push_back(pattern(sizes[i], message_key(me, me, i)));
    for (std::uint32_t i = 0; i < 4; ++i) tickets.push_back(p.post_send(me, bufs[i]));
    for (std::uint32_t i = 0; i < 4; ++i) {
      Message m = co_await p.recv(me);
      check_payload(m.bytes(), Planned{me, me, 0, i, sizes[i]});
    }
    for (auto& t : tickets) co_await p.wait(t);
    ok.fetch_add(1);
  });
  EXPECT_EQ(ok.load(), 3);
}

// A synchronous send completes only once the receiver has taken the message in,
// whatever its size: the receiver holds back its receive until told to post it.
TEST(PointToPoint, SynchronousSendCompletesWhenTakenIn) {
  Runtime rt;
  for (const auto& placement : {std::vector<int>{0, 0}, std::vector<int>{0, rt.cores().back()}}) {
    for (const std::uint32_t size : {8u, 700u, 5000u}) {
      RunOptions opts;
      opts.placement = Placement::explicit_map(placement);
      std::atomic<int> ok{0};
      rt.run(
          2,
          [&](Process& p) -> Task<void> {
            if (p.rank() == 0) {
              const auto payload = pattern(size, message_key(0, 1, size));
              SendTicket t = p.post_ssend(1, payload);
              for (int i = 0; i < 20; ++i) co_await p.yield();
              SY_CHECK(!p.test(t), "ssend of " << size << " bytes completed before its receive was posted");
              std::byte go{1};
              co_await p.send(1, std::span(&go, 1), 1);
              co_await p.wait(t);
              ok.fetch_add(1);
            } else {
              co_await p.recv(0, 1);
              Message m = co_await p.recv(0);
              check_payload(m.bytes(), Planned{0, 1, 0, size, size});
              ok.fetch_add(1);
            }
          },
          opts);
      EXPECT_EQ(ok.load(), 2);
    }
  }
}

// A receive dropped before its message came is withdrawn: the message goes to
// the next matching receive instead of into the dropped one's buffer.
TEST(PointToPoint, DroppedReceiveIsWithdrawn) {
  Runtime rt;
  std::atomic<int> ok{0};
  rt.run(2, [&](Process& p) -> Task<void> {
    if (p.rank() == 1) {
      {
        std::vector<std::byte> doomed(64, std::byte{0x5a});
        RecvTicket dropped = p.post_recv_into(0, doomed);
      }
      std::byte go{1};
      co_await p.send(0, std::span(&go, 1), 1);
      Message m = co_await p.recv(0);
      check_payload(m.bytes(), Planned{0, 1, 0, 7, 40});
      ok.fetch_add(1);
    } else {
      co_await p.recv(1, 1);
      const auto payload = pattern(40, message_key(0, 1, 7));
      co_await p.send(1, payload);
      ok.fetch_add(1);
    }
  });
  EXPECT_EQ(ok.load(), 2);
}

// What a process posts reaches its peer while the process computes: rank 0
// posts, then spins (never yielding, so its core never switches) until rank
// 1, on the other core, has finished its wait, or until a bound. Cases:
//   send       rank 0 posts a send (8 B eager, 4096 B single copy); rank 1 receives it;
//   take-in    rank 1's send (eager ssend, or single copy) has already arrived
//              when rank 0 posts the receive that takes it in; rank 1 waits for
//              its send, which that take-in completes (the acknowledgement).
// A packet that waited for the poster's core to switch would reach rank 1
// only once the spin gave up.
TEST(PointToPoint, PostedWorkReachesPeerWhileProcessComputes) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  constexpr auto kBound = std::chrono::seconds(3);
  RunOptions opts;
  opts.placement = Placement::explicit_map({rt.cores().front(), rt.cores().back()});
  for (const bool take_in : {false, true}) {
    for (const std::uint32_t size : {8u, 4096u}) {
      SCOPED_TRACE(std::string(take_in ? "take-in" : "send") + ", " + std::to_string(size) + " bytes");
      std::atomic<bool> peer_done{false};
      std::atomic<bool> seen_while_computing{false};
      // Spins without yielding until rank 1 is done or the bound has passed.
      const auto compute = [&] {
        const auto until = std::chrono::steady_clock::now() + kBound;
        while (!peer_done.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
        }
        seen_while_computing.store(peer_done.load(std::memory_order_acquire));
      };
      rt.run(
          2,
          [&](Process& p) -> Task<void> {
            const auto payload = pattern(size, message_key(p.rank(), 1 - p.rank(), size));
            std::vector<std::byte> in(size);
            if (p.rank() == 0 && !take_in) {
              SendTicket t = p.post_send(1, payload);
              compute();
              co_await p.wait(t);
            } else if (p.rank() == 1 && !take_in) {
              const std::uint64_t got = co_await p.recv_into(0, in);
              check_payload(std::span(in.data(), got), Planned{0, 1, 0, size, size});
              peer_done.store(true, std::memory_order_release);
            } else if (p.rank() == 0) {
              co_await p.recv(1, 1);  // rank 1's message, sent before this one, has arrived too
              RecvTicket r = p.post_recv_into(1, in);
              SY_CHECK(p.test(r), "the message that arrived first was not taken in when its receive was posted");
              compute();
              co_await p.wait(r);
              check_payload(in, Planned{1, 0, 0, size, size});
            } else {
              // Eager and synchronous, or single copy: either way complete only once taken in.
              SendTicket t = size <= 512 ? p.post_ssend(0, payload) : p.post_send(0, payload);
              std::byte ready{1};
              co_await p.send(0, std::span(&ready, 1), 1);
              co_await p.wait(t);
              peer_done.store(true, std::memory_order_release);
            }
          },
          opts);
      EXPECT_TRUE(seen_while_computing.load()) << "rank 1's wait ended only after rank 0 stopped computing";
    }
  }
}

// A process that waits for a message with nothing else of its core to run
// polls the rings itself before it parks (Worker::poll_before_parking): in a
// ping-pong across cores, an answer that comes within that short poll is taken
// without parking, so the job resumes its processes fewer times than they
// wait. Parking at every wait resumes them 2 * kRoundTrips + 2 times (once each
// to start, once after every receive: no answer can be there when its receive
// is posted). Every payload is checked.
TEST(PointToPoint, AWaitAloneOnItsCorePollsBeforeParking) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  constexpr std::uint64_t kRoundTrips = 2000;
  RunOptions opts;
  opts.placement = Placement::explicit_map({rt.cores().front(), rt.cores().back()});
  std::atomic<std::uint64_t> checked{0};
  const JobStats stats = rt.run(
      2,
      [&](Process& p) -> Task<void> {
        const Rank peer = 1 - p.rank();
        for (std::uint64_t i = 0; i < kRoundTrips; ++i) {
          std::uint64_t out = 2 * i + p.rank(), in = 0;
          const auto in_bytes = std::as_writable_bytes(std::span(&in, 1));
          if (p.rank() == 0) co_await p.send(peer, std::as_bytes(std::span(&out, 1)));
          const std::uint64_t got = co_await p.recv_into(peer, in_bytes);
          SY_CHECK(got == sizeof in && in == 2 * i + peer, "round trip " << i << ": got " << in);
          if (p.rank() == 1) co_await p.send(peer, std::as_bytes(std::span(&out, 1)));
          checked.fetch_add(1, std::memory_order_relaxed);
        }
      },
      opts);
  EXPECT_EQ(checked.load(), 2 * kRoundTrips);
  EXPECT_LT(stats.resumes, 2 * kRoundTrips + 2) << "every wait parked its process";
}

// A receive for a sender on another core reads that ring itself, while its
// process runs (Endpoint::post_recv): messages that lie there when it is
// posted complete it at once, with no switch and no poll by the worker, in
// order; another tag's message on the way is queued for a later receive. It
// stops before an active message, whose handler must not run inside a
// process's call: the receive behind it completes once the worker has polled,
// the handler first. Rank 0 sends only once rank 1 computes (spins), and
// rank 1 posts its receives only once rank 0 has sent: nothing can have been
// polled meanwhile. Every payload is checked.
TEST(PointToPoint, AReceiveTakesWhatLiesInItsSendersRingAtOnce) {
  Runtime rt;
  if (rt.cores().size() < 2) GTEST_SKIP() << "needs two cores";
  constexpr HandlerId kMark = 1;
  constexpr Tag kStream = 1, kAside = 2;
  constexpr std::size_t kSizes[] = {8, 0, 16};  // each one cell of the ring
  bool handled = false;  // rank 1's handler and process share its worker's thread
  RunOptions opts;
  opts.placement = Placement::explicit_map({rt.cores().front(), rt.cores().back()});
  opts.handlers[kMark] = [&](Process&, Rank, std::span<const std::byte>) { handled = true; };
  std::atomic<bool> computing{false}, all_sent{false};
  std::atomic<int> checks{0};
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        if (p.rank() == 0) {
          while (!computing.load(std::memory_order_acquire)) {
          }
          co_await p.send(1, pattern(16, message_key(0, 1, 0, kAside)), kAside);
          for (std::size_t i = 0; i < std::size(kSizes); ++i) {
            co_await p.send(1, pattern(kSizes[i], message_key(0, 1, i, kStream)), kStream);
          }
          p.post_active(1, kMark, {});
          co_await p.send(1, pattern(8, message_key(0, 1, std::size(kSizes), kStream)), kStream);
          all_sent.store(true, std::memory_order_release);
          co_return;
        }
        computing.store(true, std::memory_order_release);
        while (!all_sent.load(std::memory_order_acquire)) {
        }
        for (std::size_t i = 0; i < std::size(kSizes); ++i) {
          RecvTicket t = p.post_recv(0, kStream);
          SY_CHECK(p.test(t), "message " << i << " lay in the ring and was not taken at once");
          check_message(t.take_message(), 0, 1, i, kSizes[i], "stream", kStream);
        }
        RecvTicket aside = p.post_recv(0, kAside);
        SY_CHECK(p.test(aside), "the message read on the way was not queued");
        check_message(aside.take_message(), 0, 1, 0, 16, "aside", kAside);
        RecvTicket last = p.post_recv(0, kStream);
        SY_CHECK(!p.test(last) && !handled, "a receive read past an active message");
        co_await p.wait(last);
        SY_CHECK(handled, "the message behind the active message came before it");
        check_message(last.take_message(), 0, 1, std::size(kSizes), 8, "last", kStream);
        checks.fetch_add(1);
      },
      opts);
  EXPECT_EQ(checks.load(), 1);
}

TEST(PointToPointLarge, MessageOverTwoGiB) {
  if (sytest::kSanitized) GTEST_SKIP() << "2.5 GiB under a sanitizer is impractical";
  if (std::getenv("SWITCHYARD_SKIP_LARGE")) GTEST_SKIP() << "SWITCHYARD_SKIP_LARGE is set";
  Runtime rt;
  const std::uint64_t size = (std::uint64_t{5} << 29) + 24;  // 2.5 GiB + 24 bytes: not a multiple of a page
  const std::uint64_t words = size / 8;
  const std::uint64_t salt = 0x0123456789abcdefull;
  auto word = [&](std::uint64_t i) { return (i * 0x9e3779b97f4a7c15ull) ^ (i >> 17) ^ salt; };
  std::unique_ptr<std::uint64_t[]> data(new std::uint64_t[words]);
  for (std::uint64_t i = 0; i < words; ++i) data[i] = word(i);
  std::atomic<bool> verified{false};
  const int a = rt.cores().front(), b = rt.cores().back();
  RunOptions opts;
  opts.placement = Placement::explicit_map({a, b});
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        if (p.rank() == 0) {
          co_await p.send(1, std::span<const std::byte>(reinterpret_cast<const std::byte*>(data.get()), size), 5);
          co_return;
        }
        Message m = co_await p.recv(0, 5);
        SY_CHECK(m.size() == size, "size " << m.size());
        SY_CHECK(m.bytes().size() == size, "span size " << m.bytes().size());
        // Verify every byte against a regenerated chunk.
        const std::uint64_t chunk_words = 1 << 17;  // 1 MiB
        std::vector<std::uint64_t> want(chunk_words);
        const std::byte* got = m.bytes().data();
        for (std::uint64_t w0 = 0; w0 < words; w0 += chunk_words) {
          const std::uint64_t nw = std::min(chunk_words, words - w0);
          for (std::uint64_t i = 0; i < nw; ++i) want[i] = word(w0 + i);
          SY_CHECK(std::memcmp(got + w0 * 8, want.data(), nw * 8) == 0, "mismatch in the chunk at byte " << w0 * 8);
        }
        verified = true;
      },
      opts);
  EXPECT_TRUE(verified.load());
}

}  // namespace
