// Busy locks across nodes: a process's busy lock lives on its node, and a
// process of another node takes it by asking that node (try_busy_lock). Runs
// as one node (plain ctest) and as 2 and 3 MPI ranks (ctest -L mpi); with
// blocks of ranks per node, the lock tested below belongs to node 1, and
// processes of every node contend for it.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/online.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <vector>

#include "exchange_cases.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

constexpr Rank kPerNode = 3;

// The first rank of node 1 (blocks of kPerNode ranks per node), or rank 1 on one node.
Rank lock_owner() { return sytest::runtime().nodes() > 1 ? kPerNode : 1; }

RunOptions options(std::size_t ring_capacity = 1024) {
  RunOptions o = sytest::run_options(ring_capacity);
  o.stall_timeout = std::chrono::milliseconds(20'000);
  return o;
}

// The owner of the lock keeps a counter and a holder, plain variables of its
// own, and serves the holders' critical sections: on an `enter` it checks
// that nobody else holds the lock and answers the counter; on a `leave`
// (from the holder only) it stores the counter the holder computed. Every
// other process increments the counter `rounds` times, each a read-modify-
// write through the owner, under the lock. Messages are synchronous, so a
// `leave` has been taken in before its sender releases the lock: with one
// holder at a time, the owner never sees an enter while the lock is held,
// and no increment is lost.
struct Section {
  enum Kind : std::uint64_t { kEnter, kLeave } kind;
  std::uint64_t counter;
};
constexpr Tag kSectionTag = 1, kCounterTag = 2;

Task<void> serve_sections(Process& p, std::uint64_t messages, std::uint64_t& counter) {
  Rank holder = kAnySource;
  for (std::uint64_t k = 0; k < messages; ++k) {
    Section s{};
    RecvTicket t = p.post_recv_into(kAnySource, std::as_writable_bytes(std::span(&s, 1)), kSectionTag);
    co_await p.wait(t);
    const Rank from = t.source();
    if (s.kind == Section::kEnter) {
      SY_CHECK(holder == kAnySource, "rank " << from << " entered while rank " << holder << " holds the lock");
      holder = from;
      co_await p.ssend(from, sytest::bytes_of(counter), kCounterTag);
    } else {
      SY_CHECK(holder == from, "rank " << from << " left a section that rank " << holder << " holds");
      holder = kAnySource;
      counter = s.counter;
    }
  }
}

Task<void> increment_under_lock(Process& p, Rank owner, int rounds) {
  for (int k = 0; k < rounds; ++k) {
    while (!co_await p.try_busy_lock(owner)) co_await p.yield();
    const Section enter{Section::kEnter, 0};
    co_await p.ssend(owner, sytest::bytes_of(enter), kSectionTag);
    std::uint64_t counter = 0;
    co_await p.recv_into(owner, std::as_writable_bytes(std::span(&counter, 1)), kCounterTag);
    for (int y = 0; y < 3; ++y) co_await p.yield();  // a wide window for another holder to show up
    const Section leave{Section::kLeave, counter + 1};
    co_await p.ssend(owner, sytest::bytes_of(leave), kSectionTag);
    p.release_busy_lock(owner);
  }
}

TEST(MpiBusyLock, OneHolderAtATimeAndNoIncrementLost) {
  Runtime& rt = sytest::runtime();
  const Rank n = kPerNode * rt.nodes() + (rt.nodes() == 1 ? 2 : 0);
  const Rank owner = lock_owner();
  constexpr int kRounds = 25;
  for (std::size_t ring : {std::size_t{1}, std::size_t{1024}}) {
    SCOPED_TRACE("ring capacity " + std::to_string(ring));
    std::uint64_t counter = 0;
    rt.run(
        n,
        [&](Process& p) -> Task<void> {
          if (p.rank() == owner) {
            co_await serve_sections(p, 2 * std::uint64_t{kRounds} * (n - 1), counter);
            SY_CHECK(counter == std::uint64_t{kRounds} * (n - 1),
                     "counter " << counter << ", not " << std::uint64_t{kRounds} * (n - 1));
          } else {
            co_await increment_under_lock(p, owner, kRounds);
          }
        },
        options(ring));
  }
}

// Only the node of a process holds its lock: the atomic itself is not handed
// out elsewhere, where it would be a copy that excludes nobody.
TEST(MpiBusyLock, AnotherNodesLockIsNotHandedOutAsAnAtomic) {
  Runtime& rt = sytest::runtime();
  const Rank n = kPerNode * rt.nodes();
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        for (Rank r = 0; r < n; ++r) {
          const bool here = rt.local_ranks(n).first <= r && r < rt.local_ranks(n).end;
          bool refused = false;
          try {
            (void)p.busy_lock(r);
          } catch (const InvalidArgument& e) {
            refused = std::string(e.what()).find("another node") != std::string::npos;
          }
          SY_CHECK(refused == !here,
                   "busy_lock(" << r << ") on rank " << p.rank() << (refused ? " refused" : " given"));
        }
        co_return;
      },
      options());
}

// Counters that every node of the job maps: POSIX shared memory named after
// node 0's pid (the nodes of these tests share one machine). A BusyLockMonitor
// over them counts the senders of every node at each receiver.
class SharedCounters {
 public:
  SharedCounters(Runtime& rt, Rank n) : bytes_(sizeof(BusyLockMonitor::Counter) * n) {
    std::int64_t mine[] = {rt.node() == 0 ? static_cast<std::int64_t>(getpid()) : 0};
    const std::string name = "/switchyard_test_mpi_busy_lock_" + std::to_string(rt.node() == 0 ? mine[0] : 0);
    if (rt.node() == 0) map(name, O_CREAT | O_EXCL | O_RDWR, true);
    mine[0] = rt.sum_over_nodes(mine)[0];  // node 0 made the segment before anyone learns its name
    if (rt.node() != 0) map("/switchyard_test_mpi_busy_lock_" + std::to_string(mine[0]), O_RDWR, false);
    const std::int64_t none[] = {0};
    rt.sum_over_nodes(none);  // every node mapped it: the name may go
    if (rt.node() == 0) shm_unlink(name.c_str());
  }
  ~SharedCounters() { munmap(memory_, bytes_); }
  SharedCounters(const SharedCounters&) = delete;
  SharedCounters& operator=(const SharedCounters&) = delete;
  std::span<BusyLockMonitor::Counter> counters() {
    return {static_cast<BusyLockMonitor::Counter*>(memory_), bytes_ / sizeof(BusyLockMonitor::Counter)};
  }

 private:
  void map(const std::string& name, int flags, bool make) {
    const int fd = shm_open(name.c_str(), flags, 0600);
    if (fd < 0) throw std::runtime_error("shm_open " + name + ": " + std::strerror(errno));
    if (make && ftruncate(fd, static_cast<off_t>(bytes_)) != 0) throw std::runtime_error("ftruncate");
    memory_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (memory_ == MAP_FAILED) throw std::runtime_error("mmap " + name);
    if (make) {
      for (std::size_t k = 0; k < bytes_ / sizeof(BusyLockMonitor::Counter); ++k) {
        new (static_cast<BusyLockMonitor::Counter*>(memory_) + k) BusyLockMonitor::Counter{};
      }
    }
  }
  std::size_t bytes_;
  void* memory_ = nullptr;
};

struct DrsnCase {
  std::string matrix;
  std::size_t ring;
};

void PrintTo(const DrsnCase& c, std::ostream* os) { *os << c.matrix << ", ring capacity " << c.ring; }

class MpiDrsn : public ::testing::TestWithParam<DrsnCase> {};

// DRS_N over every node, each receiving vector the matrix's column: every
// byte of every run verified, and a monitor over counters shared by all nodes
// sees at most one sender at a time at every receiver. The inquiries (remote
// tries counted one each, as local ones) are printed for comparison with the
// one-node run of the same matrix.
TEST_P(MpiDrsn, CrossNodeLocksEveryByteOneSenderPerReceiver) {
  const DrsnCase c = GetParam();
  Runtime& rt = sytest::runtime();
  const CommMatrix m = c.matrix == "fig7" ? fig7_matrix(16, 4, 1500, 3) : sytest::nonuniform_case(13);
  const Rank n = m.size();
  SharedCounters shared(rt, n);
  BusyLockMonitor monitor(shared.counters());
  std::vector<DrsnStats> stats(n);  // per rank: each written by its own process only
  constexpr int kRuns = 3;
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 21);
        for (int run = 0; run < kRuns; ++run) {
          b.poison();
          co_await p.barrier();
          const DrsnOptions o{static_cast<std::uint64_t>(run), 1, &monitor};
          const DrsnStats s = co_await execute_drsn(p, b.column(), b, o);
          SY_CHECK(s.messages == b.row().size() && s.inquiries >= s.messages,
                   s.messages << " messages, " << s.inquiries << " inquiries");
          stats[p.rank()].inquiries += s.inquiries;
          stats[p.rank()].messages += s.messages;
          co_await p.barrier();
          if (auto bad = b.verify()) throw PayloadError("drsn run " + std::to_string(run), *bad);
        }
      },
      options(c.ring));
  EXPECT_EQ(monitor.max_in_flight(), 1);
  std::vector<std::int64_t> counts(2, 0);  // this node's inquiries and messages
  for (const DrsnStats& s : stats) {
    counts[0] += static_cast<std::int64_t>(s.inquiries);
    counts[1] += static_cast<std::int64_t>(s.messages);
  }
  const std::vector<std::int64_t> total = rt.sum_over_nodes(counts);
  if (rt.node() == 0) {
    std::cout << "DRS_N " << c.matrix << " n=" << n << " on " << rt.nodes() << " node(s), ring " << c.ring << ": "
              << total[0] << " inquiries for " << total[1] << " messages in " << kRuns << " runs\n";
  }
}

INSTANTIATE_TEST_SUITE_P(MatricesAndRings, MpiDrsn,
                         ::testing::Values(DrsnCase{"fig7", 1}, DrsnCase{"fig7", 1024}, DrsnCase{"irregular", 1},
                                           DrsnCase{"irregular", 1024}),
                         [](const auto& info) {
                           return info.param.matrix + "_ring" + std::to_string(info.param.ring);
                         });

// A process throws while it holds a lock of another node, or while it keeps
// asking for one that another node's process holds: the job ends on every
// node within 5 s, with the original error where it was thrown and a
// RemoteFailure naming it elsewhere, and nobody was ever granted a lock that
// was held. The next job starts with every lock free.
class MpiBusyLockFailure : public ::testing::TestWithParam<bool> {};

TEST_P(MpiBusyLockFailure, EndsTheJobOnEveryNode) {
  const bool holder_throws = GetParam();
  Runtime& rt = sytest::runtime();
  const Rank n = kPerNode * rt.nodes() + (rt.nodes() == 1 ? 2 : 0);
  const Rank owner = lock_owner(), holder = 0, thrower = holder_throws ? holder : 2;  // both on node 0
  const auto [kind, error, took] = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        if (p.rank() == owner) {
          co_await p.barrier();
          co_return;
        }
        if (p.rank() == holder) {
          SY_CHECK(co_await p.try_busy_lock(owner), "the first try of a free lock was refused");
          co_await p.barrier();
          if (holder_throws) {
            co_await p.sleep_for(std::chrono::milliseconds(100));
            throw std::runtime_error("boom from the holder");
          }
          co_await p.recv(owner, 9);  // never sent: the lock stays held until the job is cancelled
          co_return;
        }
        co_await p.barrier();
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        for (;;) {
          SY_CHECK(!co_await p.try_busy_lock(owner), "rank " << p.rank() << " was granted a held lock");
          if (p.rank() == thrower && std::chrono::steady_clock::now() > until) {
            throw std::runtime_error("boom from a waiter");
          }
          co_await p.yield();
        }
      },
      options());
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_NE(error.find(holder_throws ? "boom from the holder" : "boom from a waiter"), std::string::npos) << error;
  EXPECT_EQ(kind, rt.node() == 0 ? sytest::JobFailure::kOriginal : sytest::JobFailure::kRemote) << error;
  // The next job: the lock is free again, and a process of another node takes it.
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        if (p.rank() != holder) co_return;
        SY_CHECK(co_await p.try_busy_lock(owner), "the lock is still held after the failed job");
        p.release_busy_lock(owner);
      },
      options());
}

INSTANTIATE_TEST_SUITE_P(HolderOrWaiter, MpiBusyLockFailure, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Holder" : "Waiter"; });

}  // namespace
