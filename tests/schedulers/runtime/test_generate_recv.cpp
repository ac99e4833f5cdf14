// Generate_Recv, by concatenation and by active messages plus a vector sum: both
// must return exactly each process's column of the matrix, sorted by source,
// for up to 512 processes, with empty rows and columns, repeatedly in one job,
// on split communicators, and with two instances in one job.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/generate_recv.hpp>
#include <vector>

#include "exchange_cases.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

std::string show(const std::vector<MatrixEntry>& v) {
  std::string s = "[";
  for (const auto& e : v) s += " (" + std::to_string(e.peer) + ", " + std::to_string(e.bytes) + ")";
  return s + " ]";
}

bool same(const std::vector<MatrixEntry>& a, const std::vector<MatrixEntry>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const MatrixEntry& x, const MatrixEntry& y) { return x.peer == y.peer && x.bytes == y.bytes; });
}

// Both methods, `calls` times each, interleaved; every result checked on its process.
void check_both(const CommMatrix& m, int calls = 2, std::size_t ring_capacity = 1024) {
  const Rank n = m.size();
  std::vector<std::vector<MatrixEntry>> columns(n);
  for (Rank j = 0; j < n; ++j) columns[j] = m.column(j);
  GenerateRecvByActiveMessages generate(n);
  RunOptions options = sytest::run_options(ring_capacity);
  generate.install(options);
  sytest::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        for (int call = 0; call < calls; ++call) {
          const auto by_am = co_await generate.run(p, m.row(me));
          const auto by_concat = co_await generate_recv_concat(p, m.row(me));
          if (!same(by_am, columns[me])) {
            throw std::runtime_error("rank " + std::to_string(me) + " call " + std::to_string(call) +
                                     ": active messages gave " + show(by_am) + ", column is " + show(columns[me]));
          }
          if (!same(by_concat, columns[me])) {
            throw std::runtime_error("rank " + std::to_string(me) + " call " + std::to_string(call) +
                                     ": concatenation gave " + show(by_concat) + ", column is " + show(columns[me]));
          }
        }
      },
      options);
}

class GenerateRecv : public ::testing::TestWithParam<Rank> {};

TEST_P(GenerateRecv, PapersPatterns) {
  const Rank n = GetParam();
  for (Rank d : {Rank{1}, Rank{4}, Rank{16}}) {
    if (d > n) continue;
    SCOPED_TRACE("d=" + std::to_string(d));
    check_both(fig7_matrix(n, d, 1024, d));
    check_both(nonuniform_matrix(n, d, 16, d), 1);
  }
}

TEST_P(GenerateRecv, Corners) {
  for (const auto& c : sytest::special_cases(GetParam())) {
    SCOPED_TRACE(c.name);
    check_both(c.m);
  }
}

INSTANTIATE_TEST_SUITE_P(UpTo512, GenerateRecv, ::testing::Values(1, 2, 5, 32, 128, 512),
                         [](const auto& info) { return std::string("n").append(std::to_string(info.param)); });

// Half the processes send nothing and half receive nothing.
TEST(GenerateRecvEdges, EmptyRowsAndColumns) {
  const Rank n = 40;
  CommMatrix m(n);
  for (Rank i = 0; i < n; i += 2) {
    for (Rank k = 0; k < 5; ++k) m.set(i, (i + 2 * k + 1) % n, 10 + i + k);
  }
  check_both(m, 3);
}

// Memory and time must follow the messages, not n^2: Fig. 1's vector sum held
// n counts on each of n processes, 7.2 GB at n = 30 000 for a single message,
// and each reader of the concatenated rows stepped over n counts. Now the
// whole run may grow the process by what its 30 000 processes cost, not more.
TEST(GenerateRecvEdges, MemoryFollowsTheMessagesNotNSquared) {
  const Rank n = sytest::kSanitized ? 5000 : 30000;
  GenerateRecvByActiveMessages generate(n);
  RunOptions options = sytest::run_options();
  generate.install(options);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  std::vector<Rank> got(2, 0);
  sytest::runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const std::vector<MatrixEntry> row{{1, 64}};
        const auto mine = p.rank() == n - 1 ? std::span(row) : std::span<const MatrixEntry>();
        const auto recvl = co_await generate.run(p, mine);
        const auto concat = co_await generate_recv_concat(p, mine);
        SY_CHECK(recvl == concat, "both ways agree");
        if (p.rank() < 2) got[p.rank()] = static_cast<Rank>(recvl.size());
        if (p.rank() == 1) SY_CHECK(recvl[0].peer == n - 1 && recvl[0].bytes == 64, "the one message");
      },
      options);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(got[1], 1);
  const long grown_kib = after.ru_maxrss - before.ru_maxrss;
  EXPECT_LT(grown_kib, 1024L * 1024) << "peak RSS grew by " << grown_kib << " KiB for " << n << " processes";
}

TEST(GenerateRecvEdges, OnePacketRings) { check_both(fig7_matrix(64, 16, 8, 2), 2, 1); }

TEST(GenerateRecvEdges, RejectsBadSendingVectors) {
  GenerateRecvByActiveMessages generate(3);
  RunOptions options = sytest::run_options();
  generate.install(options);
  const std::vector<MatrixEntry> unsorted{{2, 8}, {1, 8}}, outside{{3, 8}}, empty_message{{1, 0}};
  for (const auto* bad : {&unsorted, &outside, &empty_message}) {
    EXPECT_THROW(sytest::runtime().run(
                     3, [&](Process& p) -> Task<void> { co_await generate_recv_concat(p, *bad); }, options),
                 InvalidArgument);
    EXPECT_THROW(sytest::runtime().run(
                     3, [&](Process& p) -> Task<void> { co_await generate.run(p, *bad); }, options),
                 InvalidArgument);
  }
  GenerateRecvByActiveMessages wrong_size(4);
  RunOptions other = sytest::run_options();
  wrong_size.install(other);
  EXPECT_THROW(sytest::runtime().run(
                   3, [&](Process& p) -> Task<void> { co_await wrong_size.run(p, {}); }, other),
               InvalidArgument);
}

// Each half of the job has a matrix of its own, in its own ranks.
TEST(GenerateRecvEdges, OnSplitCommunicators) {
  const CommMatrix halves[2] = {fig7_matrix(10, 3, 64, 1), nonuniform_matrix(10, 4, 8, 2)};
  GenerateRecvByActiveMessages generate(20);
  RunOptions options = sytest::run_options();
  generate.install(options);
  sytest::runtime().run(
      20,
      [&](Process& p) -> Task<void> {
        // Ranked in reverse, so that ranks in the half differ from ranks in the job.
        const Communicator half = co_await p.world().split(p.rank() % 2, -static_cast<std::int64_t>(p.rank()));
        const CommMatrix& m = halves[p.rank() % 2];
        const Rank me = half.rank();
        for (int call = 0; call < 2; ++call) {
          const auto by_am = co_await generate.run(half, m.row(me));
          const auto by_concat = co_await generate_recv_concat(half, m.row(me));
          SY_CHECK(same(by_am, m.column(me)),
                   "active messages on rank " << me << " of half " << p.rank() % 2 << ": " << show(by_am));
          SY_CHECK(same(by_concat, m.column(me)), "concatenation on rank " << me << ": " << show(by_concat));
        }
      },
      options);
}

// Two objects in one job: the second takes the next free handler id, and
// each collects its own messages.
TEST(GenerateRecvEdges, TwoInstancesInOneJob) {
  const CommMatrix a = fig7_matrix(12, 3, 16, 3), b = nonuniform_matrix(12, 5, 4, 4);
  GenerateRecvByActiveMessages first(12), second(12);
  RunOptions options = sytest::run_options();
  EXPECT_EQ(first.install(options), GenerateRecvByActiveMessages::kHandlerId);
  EXPECT_EQ(second.install(options), GenerateRecvByActiveMessages::kHandlerId + 1);
  sytest::runtime().run(
      12,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        for (int call = 0; call < 3; ++call) {
          const auto from_first = co_await first.run(p, a.row(me));
          const auto from_second = co_await second.run(p, b.row(me));
          SY_CHECK(same(from_first, a.column(me)), "first instance on rank " << me << ": " << show(from_first));
          SY_CHECK(same(from_second, b.column(me)), "second instance on rank " << me << ": " << show(from_second));
        }
      },
      options);
}

TEST(GenerateRecvEdges, RefusesToRunUninstalled) {
  GenerateRecvByActiveMessages generate(2);
  EXPECT_THROW(sytest::runtime().run(
                   2, [&](Process& p) -> Task<void> { co_await generate.run(p, {}); }, sytest::run_options()),
               InvalidArgument);
}

TEST(GenerateRecvEdges, HandlerIdIsTheDocumentedOne) {
  GenerateRecvByActiveMessages generate(2);
  RunOptions options;
  generate.install(options);
  ASSERT_EQ(options.handlers.size(), 1u);
  EXPECT_EQ(options.handlers.begin()->first, GenerateRecvByActiveMessages::kHandlerId);
}

}  // namespace
