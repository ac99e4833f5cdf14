// The static tasks as calls on communicators (switchyard/primitives): every task,
// every algorithm, on communicators of 1, 2, 3, 7, 12, 16 and 64 members, with
// several roots and subsets and blocks below and above the eager limit. Every
// byte received is checked against the pattern of its (task, source,
// destination, round); accumulations against a sequential reference, including
// a non-commutative operator whose result depends on the order. Bad arguments
// must be InvalidArgument.

#include <switchyard/primitives/accumulate.hpp>
#include <switchyard/primitives/binomial_tree.hpp>
#include <switchyard/primitives/multinode.hpp>
#include <switchyard/primitives/run_pattern.hpp>
#include <switchyard/primitives/single_node.hpp>
#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "primitive_patterns.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
namespace prim = switchyard::primitives;
using prim::Algorithm;
using sytest::first_mismatch;
using sytest::mix;
using sytest::pattern;

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

// Runs body on n processes and checks that every process got to the end.
void run_job(Rank n, const std::function<Task<void>(Communicator)>& body) {
  std::atomic<Rank> finished{0};
  RunOptions options;
  options.stall_timeout = std::chrono::milliseconds(30'000);
  runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        co_await body(p.world());
        finished.fetch_add(1);
      },
      options);
  EXPECT_EQ(finished.load(), n);
}

// The bytes source sends to destination in a task's round (destination kAll: to everyone).
constexpr Rank kAll = kAnySource;
std::uint64_t key(int task, Rank source, Rank destination, std::uint64_t round) {
  return mix(static_cast<std::uint64_t>(task), source, destination, round);
}
void check_block(std::span<const std::byte> got, std::uint64_t k, const std::string& what) {
  const std::size_t at = first_mismatch(got, k);
  SY_CHECK(at == std::string::npos, what << ": byte " << at << " of " << got.size() << " is wrong");
}

// Deterministic subsets of [0, n): about half, never empty; variant 0 is everyone but rank 0 (if n > 1).
std::vector<Rank> subset(Rank n, std::uint64_t variant) {
  std::vector<Rank> s;
  for (Rank r = 0; r < n; ++r) {
    if (variant == 0 ? (r != 0 || n == 1) : mix(r, variant, 77) % 2 == 0) s.push_back(r);
  }
  if (s.empty()) s.push_back(static_cast<Rank>(variant % n));
  return s;
}
std::vector<Rank> roots(Rank n) {
  std::vector<Rank> r{0, n - 1, n / 2};
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}
bool contains(const std::vector<Rank>& s, Rank r) { return std::binary_search(s.begin(), s.end(), r); }

prim::CallOptions with(Algorithm a, prim::Workspace& ws) {
  prim::CallOptions options;
  options.algorithm = a;
  options.workspace = &ws;
  return options;
}

constexpr std::size_t kBlocks[] = {1, 40, 700};  // 700 > the eager limit: single-copy messages

// --- single-node tasks ---

Task<void> single_node(Communicator c, Algorithm a) {
  const Rank n = c.size(), me = c.rank();
  prim::Workspace ws;
  const prim::CallOptions options = with(a, ws);
  std::uint64_t round = 0;
  for (std::size_t block : kBlocks) {
    for (Rank root : roots(n)) {
      for (std::uint64_t v = 0; v < 3; ++v, ++round) {
        const std::vector<Rank> m = subset(n, v + round);
        const bool member = contains(m, me);
        // SNB / SSNB
        std::vector<std::byte> buffer =
            me == root ? pattern(block, key(1, root, kAll, round)) : std::vector<std::byte>(block);
        co_await prim::snb(c, root, buffer, options);
        check_block(buffer, key(1, root, kAll, round), "snb");
        buffer = me == root ? pattern(block, key(2, root, kAll, round)) : std::vector<std::byte>(block);
        co_await prim::ssnb(c, root, m, buffer, options);
        if (member || me == root) check_block(buffer, key(2, root, kAll, round), "ssnb");
        // SNS / SSNS
        std::vector<std::byte> all, mine(block);
        if (me == root) {
          for (Rank d = 0; d < n; ++d) {
            auto b = pattern(block, key(3, root, d, round));
            all.insert(all.end(), b.begin(), b.end());
          }
        }
        co_await prim::sns(c, root, all, mine, options);
        check_block(mine, key(3, root, me, round), "sns");
        all.clear();
        if (me == root) {
          for (Rank d : m) {
            auto b = pattern(block, key(4, root, d, round));
            all.insert(all.end(), b.begin(), b.end());
          }
        }
        co_await prim::ssns(c, root, m, all, member ? std::span<std::byte>(mine) : std::span<std::byte>{}, options);
        if (member) check_block(mine, key(4, root, me, round), "ssns");
        // SNG / SSNG
        const auto out = pattern(block, key(5, me, root, round));
        all.assign(me == root ? n * block : 0, std::byte{0});
        co_await prim::sng(c, root, out, all, options);
        if (me == root) {
          for (Rank s = 0; s < n; ++s)
            check_block(std::span(all).subspan(s * block, block), key(5, s, root, round),
                        "sng from " + std::to_string(s));
        }
        const auto out2 = pattern(block, key(6, me, root, round));
        all.assign(me == root ? m.size() * block : 0, std::byte{0});
        co_await prim::ssng(c, root, m, member ? std::span<const std::byte>(out2) : std::span<const std::byte>{}, all,
                            options);
        if (me == root) {
          for (std::size_t i = 0; i < m.size(); ++i)
            check_block(std::span(all).subspan(i * block, block), key(6, m[i], root, round), "ssng");
        }
      }
    }
  }
}

// --- accumulations ---

// 2x2 matrices of integers mod 2^64 under the product: associative, not commutative.
struct Mat {
  std::uint64_t a, b, c, d;
  bool operator==(const Mat&) const = default;
};
Mat product(Mat x, Mat y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}
Mat mat_of(Rank r, std::uint64_t round, std::size_t i) {
  const std::uint64_t k = mix(r, round, i, 9);
  return {k | 1, k >> 7, k >> 13, (k >> 3) | 1};
}

Task<void> accumulations(Communicator c) {
  const Rank n = c.size(), me = c.rank();
  std::uint64_t round = 0;
  for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{50}}) {
    for (Rank root : roots(n)) {
      for (bool commutative : {false, true}) {
        ++round;
        prim::CallOptions options;
        options.commutative = commutative;
        // SNA with + on int64 (and the commutative flag either way), then the matrix product in rank order.
        std::vector<std::int64_t> mine(count), sum(me == root ? count : 0);
        for (std::size_t i = 0; i < count; ++i) mine[i] = static_cast<std::int64_t>(mix(me, round, i) % 1000) - 500;
        co_await prim::sna(c, root, std::span<const std::int64_t>(mine), std::span<std::int64_t>(sum), std::plus<>{},
                           options);
        if (me == root) {
          for (std::size_t i = 0; i < count; ++i) {
            std::int64_t want = 0;
            for (Rank r = 0; r < n; ++r) want += static_cast<std::int64_t>(mix(r, round, i) % 1000) - 500;
            SY_CHECK(sum[i] == want, "sna sum element " << i);
          }
        }
        std::vector<Mat> mats(count), prod(me == root ? count : 0);
        for (std::size_t i = 0; i < count; ++i) mats[i] = mat_of(me, round, i);
        const std::vector<Rank> m = subset(n, round);
        prim::CallOptions ordered;  // the product is not commutative
        co_await prim::ssna(
            c, root, m, std::span<const Mat>(mats), std::span<Mat>(prod),
            [](std::span<Mat> acc, std::span<const Mat> in) {
              for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = product(acc[i], in[i]);
            },
            ordered);
        if (me == root) {
          for (std::size_t i = 0; i < count; ++i) {
            Mat want = mat_of(m[0], round, i);
            for (std::size_t k = 1; k < m.size(); ++k) want = product(want, mat_of(m[k], round, i));
            SY_CHECK(prod[i] == want, "ssna product in rank order, element " << i << " root " << root);
          }
        }
        // PMNA: destinations get the element-wise product (ordered) or max (commutative) of their blocks.
        const std::vector<Rank> dests = subset(n, round + 1000);
        std::vector<Mat> contributions(dests.size() * count);
        for (std::size_t j = 0; j < dests.size(); ++j)
          for (std::size_t i = 0; i < count; ++i) contributions[j * count + i] = mat_of(me, round + j, i);
        const std::int64_t at = std::lower_bound(dests.begin(), dests.end(), me) - dests.begin();
        const bool is_dest = contains(dests, me);
        std::vector<Mat> got(is_dest ? count : 0);
        if (commutative) {
          co_await prim::pmna(
              c, dests, std::span<const Mat>(contributions), std::span<Mat>(got),
              [](Mat x, Mat y) {
                return Mat{x.a + y.a, std::max(x.b, y.b), x.c ^ y.c, x.d * y.d};
              },
              options);
        } else {
          co_await prim::pmna(c, dests, std::span<const Mat>(contributions), std::span<Mat>(got), product, options);
        }
        if (is_dest) {
          for (std::size_t i = 0; i < count; ++i) {
            Mat want = mat_of(0, round + at, i);
            for (Rank r = 1; r < n; ++r) {
              const Mat x = mat_of(r, round + at, i);
              want =
                  commutative ? Mat{want.a + x.a, std::max(want.b, x.b), want.c ^ x.c, want.d * x.d} : product(want, x);
            }
            SY_CHECK(got[i] == want, "pmna element " << i << " at destination " << me);
          }
        }
      }
    }
  }
}

// --- one-to-one, permutation, MNB, PMNB ---

Task<void> point_and_broadcasts(Communicator c, Algorithm allgather_algorithm) {
  const Rank n = c.size(), me = c.rank();
  prim::CallOptions options;
  options.algorithm = allgather_algorithm;
  std::uint64_t round = 100;
  for (std::size_t block : kBlocks) {
    ++round;
    const Rank src = static_cast<Rank>(round % n), dst = static_cast<Rank>((round * 7) % n);
    std::vector<std::byte> recv(block);
    co_await prim::one_to_one(c, src, dst, pattern(block, key(10, src, dst, round)), recv);
    if (me == dst) check_block(recv, key(10, src, dst, round), "one_to_one");
    // A permutation: a rotation by round with every third rank sending nothing.
    std::vector<Rank> destination(n);
    for (Rank r = 0; r < n; ++r) destination[r] = r % 3 == 2 ? prim::kNoPacket : static_cast<Rank>((r + round) % n);
    co_await prim::permutation(c, destination, pattern(block, key(11, me, destination[me], round)), recv);
    const Rank from = static_cast<Rank>((me + n - round % n) % n);
    if (destination[from] == me) check_block(recv, key(11, from, me, round), "permutation");
    // MNB and PMNB
    std::vector<std::byte> all(n * block);
    co_await prim::mnb(c, pattern(block, key(12, me, kAll, round)), all, options);
    for (Rank s = 0; s < n; ++s) check_block(std::span(all).subspan(s * block, block), key(12, s, kAll, round), "mnb");
    for (std::uint64_t v = 0; v < 3; ++v) {
      const std::vector<Rank> senders = subset(n, round * 3 + v);
      all.assign(senders.size() * block, std::byte{0});
      co_await prim::pmnb(c, senders, pattern(block, key(13, me, kAll, round)), all, options);
      for (std::size_t i = 0; i < senders.size(); ++i)
        check_block(std::span(all).subspan(i * block, block), key(13, senders[i], kAll, round), "pmnb");
    }
  }
}

// --- TE, PMNS, PMNG ---

Task<void> exchanges(Communicator c, Algorithm a) {
  const Rank n = c.size(), me = c.rank();
  prim::Workspace ws;
  const prim::CallOptions options = with(a, ws);
  std::uint64_t round = 200;
  for (std::size_t block : kBlocks) {
    ++round;
    std::vector<std::byte> send, recv(n * block);
    for (Rank d = 0; d < n; ++d) {
      auto b = pattern(block, key(20, me, d, round));
      send.insert(send.end(), b.begin(), b.end());
    }
    co_await prim::te(c, send, recv, options);
    for (Rank s = 0; s < n; ++s) check_block(std::span(recv).subspan(s * block, block), key(20, s, me, round), "te");
    for (std::uint64_t v = 0; v < 3; ++v) {
      const std::vector<Rank> s = subset(n, round * 5 + v);
      // PMNS: the senders' blocks for every rank; every rank gets one per sender.
      recv.assign(s.size() * block, std::byte{0});
      co_await prim::pmns(c, s, contains(s, me) ? std::span<const std::byte>(send) : std::span<const std::byte>{}, recv,
                          options);
      for (std::size_t i = 0; i < s.size(); ++i)
        check_block(std::span(recv).subspan(i * block, block), key(20, s[i], me, round), "pmns");
      // PMNG: every rank's blocks for the gatherers s.
      std::vector<std::byte> to_gatherers;
      for (Rank g : s) {
        auto b = pattern(block, key(21, me, g, round));
        to_gatherers.insert(to_gatherers.end(), b.begin(), b.end());
      }
      recv.assign(contains(s, me) ? n * block : 0, std::byte{0});
      co_await prim::pmng(c, s, to_gatherers, recv, options);
      if (contains(s, me)) {
        for (Rank src = 0; src < n; ++src)
          check_block(std::span(recv).subspan(src * block, block), key(21, src, me, round), "pmng");
      }
    }
  }
}

// The tree the calls run on: subtree sizes and preorder positions against a
// depth-first walk of for_each_binomial_child (children by decreasing slot).
TEST(BinomialTree, SubtreeSizesAndPreorderMatchTheChildren) {
  for (std::int64_t n = 1; n <= 300; ++n) {
    std::vector<std::int64_t> preorder;
    std::function<std::int64_t(std::int64_t)> walk = [&](std::int64_t v) {
      preorder.push_back(v);
      std::vector<std::int64_t> children;
      prim::for_each_binomial_child(v, n, [&](std::int64_t c, int) { children.push_back(c); });
      std::int64_t size = 1;
      for (auto it = children.rbegin(); it != children.rend(); ++it) size += walk(*it);
      EXPECT_EQ(size, prim::binomial_subtree_size(v, n)) << "n " << n << " v " << v;
      return size;
    };
    ASSERT_EQ(walk(0), n);
    for (std::size_t i = 0; i < preorder.size(); ++i) {
      ASSERT_EQ(prim::binomial_position(preorder[i], n), static_cast<std::int64_t>(i)) << "n " << n;
      ASSERT_EQ(prim::binomial_node_at(static_cast<std::int64_t>(i), n), preorder[i]) << "n " << n;
    }
  }
}

class PrimitiveCalls : public ::testing::TestWithParam<Rank> {};

TEST_P(PrimitiveCalls, SingleNodeTasksAutoBinomialAndDirect) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kBinomial, Algorithm::kDirect}) {
    run_job(GetParam(), [a](Communicator c) { return single_node(c, a); });
  }
}

TEST_P(PrimitiveCalls, AccumulationsInRankOrderAndCommutative) {
  run_job(GetParam(), [](Communicator c) { return accumulations(c); });
}

TEST_P(PrimitiveCalls, OneToOnePermutationMnbPmnb) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kBruck, Algorithm::kRing, Algorithm::kDirect}) {
    run_job(GetParam(), [a](Communicator c) { return point_and_broadcasts(c, a); });
  }
}

TEST_P(PrimitiveCalls, TotalExchangePmnsPmng) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kBruck, Algorithm::kPairwise, Algorithm::kDirect}) {
    run_job(GetParam(), [a](Communicator c) { return exchanges(c, a); });
  }
}

INSTANTIATE_TEST_SUITE_P(Members, PrimitiveCalls, ::testing::Values(1, 2, 3, 7, 12, 16, 64),
                         [](const auto& info) { return std::to_string(info.param).insert(0, 1, 'n'); });

// The tasks run on the library's own communicator: a receive the caller posted
// on the same communicator, with the same tag, before the call, gets the
// caller's own message afterwards, not one of the task's.
TEST(PrimitiveCallsIsolation, CallerReceivesNeverSeeTaskMessages) {
  run_job(8, [](Communicator c) -> Task<void> {
    const Rank n = c.size(), me = c.rank();
    RecvTicket mine = c.post_recv((me + n - 1) % n, 0);
    std::vector<std::byte> all(n * 16);
    co_await prim::mnb(c, pattern(16, key(30, me, kAll, 0)), all);
    co_await c.send((me + 1) % n, pattern(8, key(31, me, 0, 0)), 0);
    co_await c.process().wait(mine);
    check_block(mine.take_message().bytes(), key(31, (me + n - 1) % n, 0, 0), "the caller's own message");
  });
}

// run(): random patterns through their classified tasks. Every member checks
// each packet it receives (copied packets keyed by sender only, personal ones
// by sender and receiver); combinable ones carry 64-bit words whose wrapping
// sum over the sources, in rank order, must arrive.
TEST(RunPattern, RandomPatternsArriveThroughTheirTasks) {
  std::mt19937_64 rng(5);
  std::vector<int> ran(prim::kStaticTasks, 0);
  for (int trial = 0; trial < 120; ++trial) {
    const Rank n = 2 + static_cast<Rank>(rng() % 8);
    prim::Pattern p = sytest::random_pattern(rng, n);
    p.bytes = 8 * (1 + rng() % 3);
    const auto packet_key = [&](Rank s, Rank d) { return key(40 + trial, s, p.sends[s].same_packet ? kAll : d, 0); };
    const auto expected = [&](Rank me) {
      std::vector<std::uint64_t> sum(p.bytes / 8, 0);
      for (Rank s = 0; s < n; ++s) {
        if (!std::binary_search(p.sends[s].to.begin(), p.sends[s].to.end(), me)) continue;
        const auto b = pattern(p.bytes, packet_key(s, me));
        for (std::size_t i = 0; i < sum.size(); ++i) {
          std::uint64_t w;
          std::memcpy(&w, b.data() + 8 * i, 8);
          sum[i] += w;
        }
      }
      return sum;
    };
    const auto plus = std::plus<std::uint64_t>{};
    const prim::Combiner add = prim::combiner_for<std::uint64_t>(plus);
    std::atomic<int> task{-1};
    run_job(n, [&](Communicator c) -> Task<void> {
      const Rank me = c.rank();
      std::vector<std::vector<std::byte>> out, in;
      const auto& mine = p.sends[me];
      if (!mine.to.empty()) {
        if (mine.same_packet)
          out.push_back(pattern(p.bytes, packet_key(me, 0)));
        else
          for (Rank d : mine.to) out.push_back(pattern(p.bytes, packet_key(me, d)));
      }
      std::vector<Rank> sources;
      for (Rank s = 0; s < n; ++s)
        if (std::binary_search(p.sends[s].to.begin(), p.sends[s].to.end(), me)) sources.push_back(s);
      in.assign(p.combinable ? std::min<std::size_t>(1, sources.size()) : sources.size(),
                std::vector<std::byte>(p.bytes));
      std::vector<std::span<const std::byte>> send(out.begin(), out.end());
      std::vector<std::span<std::byte>> recv(in.begin(), in.end());
      const prim::Classification how = co_await prim::run(c, p, prim::PatternBuffers{send, recv}, &add);
      task.store(static_cast<int>(how.task));
      if (p.combinable) {
        if (!sources.empty()) {
          const auto want = expected(me);
          SY_CHECK(std::memcmp(in[0].data(), want.data(), p.bytes) == 0,
                   "combined packet at " << me << " via " << prim::task_name(how.task));
        }
      } else {
        for (std::size_t i = 0; i < sources.size(); ++i)
          check_block(in[i], packet_key(sources[i], me),
                      std::string("run via ") + std::string(prim::task_name(how.task)));
      }
    });
    ++ran[static_cast<std::size_t>(task.load())];
  }
  int tasks_run = 0;
  for (int r : ran) tasks_run += r > 0;
  EXPECT_GE(tasks_run, 12) << "the random patterns ran through too few of the tasks";
}

// Each bad argument is InvalidArgument with a message naming the task.
void expect_invalid(Rank n, const std::function<Task<void>(Communicator)>& call, const std::string& needle) {
  try {
    run_job(n, call);
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(PrimitiveCallsArguments, BadArgumentsAreInvalidArgument) {
  std::vector<std::byte> b8(8), b32(32), b10(10);
  const std::vector<Rank> unsorted{2, 1}, outside{1, 9}, empty{};
  expect_invalid(
      4, [&](Communicator c) { return prim::snb(c, 4, b8); }, "snb: root 4");
  expect_invalid(
      4, [&](Communicator c) { return prim::ssnb(c, 0, unsorted, b8); }, "strictly increasing");
  expect_invalid(
      4, [&](Communicator c) { return prim::ssns(c, 0, outside, b8, b8); }, "ssns: members 9");
  expect_invalid(
      4, [&](Communicator c) { return prim::pmnb(c, empty, b8, b8); }, "senders is empty");
  expect_invalid(
      4, [&](Communicator c) { return prim::sns(c, 0, b8, b8); }, "sns: the root's send buffer");
  expect_invalid(
      4, [&](Communicator c) { return prim::te(c, b10, b10); }, "te: the send buffer holds 10 bytes");
  expect_invalid(
      4, [&](Communicator c) { return prim::te(c, b32, b8); }, "te: the receive buffer");
  expect_invalid(
      4, [&](Communicator c) { return prim::mnb(c, b8, b8); }, "mnb: the result buffer");
  expect_invalid(
      4,
      [&](Communicator c) {
        return prim::snb(
            c, 0, c.rank() == 0 ? std::span<std::byte>(b8) : std::span<std::byte>(b32));  // root's block is smaller
      },
      "snb: rank");
  const std::vector<Rank> collide{1, 1, prim::kNoPacket, 0};
  expect_invalid(
      4, [&](Communicator c) { return prim::permutation(c, collide, b8, b8); }, "both send to 1");
  expect_invalid(
      4, [&](Communicator c) { return prim::permutation(c, outside, b8, b8); }, "destination has 2 entries");
  prim::CallOptions ring;
  ring.algorithm = Algorithm::kRing;
  expect_invalid(
      4, [&](Communicator c) { return prim::te(c, b32, b32, ring); }, "te: algorithm ring");
  std::vector<std::int64_t> five(5), one(1);
  const std::vector<Rank> two{0, 1};
  expect_invalid(
      4,
      [&](Communicator c) {
        return prim::pmna(c, std::span<const Rank>(two), std::span<const std::int64_t>(five),
                          std::span<std::int64_t>(one), std::plus<>{});
      },
      "pmna: a member's contribution");
}

}  // namespace
