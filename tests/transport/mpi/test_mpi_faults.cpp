// The fault-injection and misuse harness for jobs across MPI nodes.
// Each scenario injects, drawn from a seed (SWITCHYARD_FAULT_SEED, 1 unless
// set; every node draws the same choices from it), faults or misuses into
// jobs on 2 or 3 nodes, and checks on every node the exact error it is told,
// and that every node ends each trial within 10 s (a watchdog ends the node,
// saying so, at 15 s, should a trial hang). ctest runs each scenario as an
// entry of its own on 2 and on 3 nodes (mpi.faults.<scenario>.npR), under ASan
// too; as one node (the plain suite) the scenarios that need nodes skip.
// A node killed outright (MpiFaultsKill) is run only by its ctest entries,
// which check mpirun's exit, what it says, and the time (tests/transport/mpi/mpi_kill.cmake).

#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/payload.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "exchange_forms.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;
using std::chrono::seconds;
using sytest::JobFailure;

// Every node ends each trial within this.
constexpr auto kBound = seconds(10);

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

// The choices of trial `trial` of a scenario, alike on every node.
std::mt19937_64 draw(std::uint64_t scenario, std::uint64_t trial) {
  const char* seed = std::getenv("SWITCHYARD_FAULT_SEED");
  return std::mt19937_64(sytest::mix(seed ? std::strtoull(seed, nullptr, 10) : 1, scenario, trial));
}
std::uint64_t pick(std::mt19937_64& g, std::uint64_t below) { return g() % below; }

RunOptions options() {
  RunOptions o;
  o.stall_timeout = std::chrono::milliseconds(5'000);
  return o;
}

// Ends this node, saying so, if a trial outlasts 15 s: a hang fails the
// entry at once, naming where, instead of at ctest's timeout.
class Watchdog {
 public:
  explicit Watchdog(std::string what) : what_(std::move(what)), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      over_ = true;
    }
    over_changed_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch() {
    std::unique_lock lock(mutex_);
    if (over_changed_.wait_for(lock, seconds(15), [this] { return over_; })) return;
    std::fprintf(stderr, "fault harness: watchdog: node %u still in %s after 15 s\n", runtime().node(), what_.c_str());
    std::_Exit(3);
  }
  std::string what_;
  std::mutex mutex_;
  std::condition_variable over_changed_;
  bool over_ = false;
  std::thread thread_;
};

// A job alike on every node that checks every byte: the runtime is whole again.
void healthy_job(Runtime& rt, std::uint64_t round) {
  const Rank n = 2 * rt.nodes();
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank right = (p.rank() + 1) % n, left = (p.rank() + n - 1) % n;
        RecvTicket r = p.post_recv(left, 1);
        co_await p.send(right, sytest::pattern(6000, sytest::message_key(p.rank(), right, round)), 1);
        co_await p.wait(r);
        sytest::check_message(r.take_message(), left, p.rank(), round, 6000, "the healthy job");
        co_await p.barrier();
      },
      options());
}

constexpr const char* kNeedsNodes = "needs 2 nodes or more (ctest -L mpi)";

// --- A process throws -------------------------------------------------------

// Rounds of a ring of messages (eager within a node and between nodes, or
// rendezvous) with a barrier or an allreduce every other round; rank
// `thrower` throws at the start of round `at`, while every other process
// waits for a message or a collective that can never complete.
TEST(MpiFaults, AProcessThatThrowsEndsTheJobOnEveryNodeNamingNodeAndRank) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  constexpr std::uint64_t kSizes[]{8, 600, 5000, 70000};
  for (std::uint64_t trial = 0; trial < 6; ++trial) {
    auto g = draw(1, trial);
    const Rank n = rt.nodes() * (1 + pick(g, 4));
    const Rank thrower = pick(g, n);
    const int at = static_cast<int>(pick(g, 6));
    const std::uint64_t bytes = kSizes[pick(g, 4)];
    const std::string text =
        "injected fault: rank " + std::to_string(thrower) + " throws in round " + std::to_string(at);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(n) + " processes, " + text + ", " +
                 std::to_string(bytes) + " bytes");
    Watchdog watchdog("a throw, trial " + std::to_string(trial));
    const JobFailure e = sytest::run_failing(
        rt, n,
        [&](Process& p) -> Task<void> {
          const Rank right = (p.rank() + 1) % n, left = (p.rank() + n - 1) % n;
          for (int k = 0; k < 6; ++k) {
            if (p.rank() == thrower && k == at) throw std::runtime_error(text);
            RecvTicket r = p.post_recv(left, k);
            co_await p.send(right, sytest::pattern(bytes, sytest::message_key(p.rank(), right, k)), k);
            co_await p.wait(r);
            sytest::check_message(r.take_message(), left, p.rank(), k, bytes, "round " + std::to_string(k), 0);
            if (k % 2 == 0) {
              co_await p.barrier();
            } else {
              const std::int64_t one[1]{1};
              SY_CHECK((co_await p.world().allreduce(one))[0] == n, "the allreduce");
            }
          }
        },
        options());
    EXPECT_LT(e.took, kBound);
    const auto its = static_cast<std::uint32_t>(thrower / ((n + rt.nodes() - 1) / rt.nodes()));  // blocks
    if (its == rt.node()) {
      EXPECT_EQ(e.kind, JobFailure::kOriginal) << e.error;
      EXPECT_EQ(e.error, text);
    } else {
      EXPECT_EQ(e.kind, JobFailure::kRemote) << e.error;
      EXPECT_EQ(e.error,
                "switchyard: node " + std::to_string(its) + " failed (rank " + std::to_string(thrower) + "): " + text);
    }
  }
  healthy_job(rt, 1);
}

// --- Nodes that start different jobs -----------------------------------------

// What every node is told when nodes disagree on a job (job_agreement.hpp).
constexpr const char* kDisagree =
    "switchyard: run: the nodes disagree on the job (every node runs the same jobs, with the same arguments, in the "
    "same order): ";

// One clause of it: "node 0 <lead><v0>, node 1 <rest><v1>, ...".
std::string clause(std::uint32_t nodes, const std::string& lead, const std::string& rest,
                   const std::function<std::string(std::uint32_t)>& value) {
  std::string text = "node 0 " + lead + value(0);
  for (std::uint32_t k = 1; k < nodes; ++k) text += ", node " + std::to_string(k) + " " + rest + value(k);
  return text;
}

// Runs `body` on this node as the job it starts, expecting every node to be
// told `said` at once (an InvalidArgument, within kBound).
template <class Body>
void expect_told(Runtime& rt, Rank n, Body body, const RunOptions& o, const std::string& said) {
  const auto start = std::chrono::steady_clock::now();
  std::string error = "(run returned)";
  try {
    rt.run(n, body, o);
  } catch (const InvalidArgument& e) {
    error = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, kBound);
  EXPECT_EQ(error, kDisagree + said);
}

// Node `odd` (drawn) runs a job of another size than the others.
TEST(MpiFaults, NodesThatDisagreeOnAJobsSizeAreEachNamed) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  for (std::uint64_t trial = 0; trial < 4; ++trial) {
    auto g = draw(2, trial);
    const std::uint32_t odd = static_cast<std::uint32_t>(pick(g, rt.nodes()));
    const Rank usual = 1 + pick(g, 12), other = usual + 1 + pick(g, 5);
    auto size = [&](std::uint32_t node) { return node == odd ? other : usual; };
    Watchdog watchdog("sizes, trial " + std::to_string(trial));
    expect_told(
        rt, size(rt.node()), [](Process& p) -> Task<void> { co_await p.barrier(); }, options(),
        clause(rt.nodes(), "runs a job of ", "one of ",
               [&](std::uint32_t k) { return std::to_string(size(k)) + " processes"; }));
  }
  healthy_job(rt, 2);
}

// Two bodies of distinct types, which the nodes name alike.
struct CommonJob {
  Task<void> operator()(Process& p) const { co_await p.barrier(); }
};
struct ExtraJob {
  Task<void> operator()(Process&) const { co_return; }  // nothing across nodes: it would pair silently
};

// Node `odd` runs a job the others do not, of the same size, before the job
// they all run: it pairs with the others' job. Every node is told at once,
// naming each node's body; the nodes go on in step.
TEST(MpiFaults, ANodeRunningAnExtraJobOfTheSameSizeIsToldAtOnce) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  for (std::uint64_t trial = 0; trial < 3; ++trial) {
    auto g = draw(3, trial);
    const std::uint32_t odd = static_cast<std::uint32_t>(pick(g, rt.nodes()));
    const Rank n = rt.nodes() * (1 + pick(g, 3));
    Watchdog watchdog("an extra job, trial " + std::to_string(trial));
    const std::string said = clause(rt.nodes(), "runs the body ", "the body ", [&](std::uint32_t k) {
      return std::string(k == odd ? "(anonymous namespace)::ExtraJob" : "(anonymous namespace)::CommonJob");
    });
    if (rt.node() == odd) {
      expect_told(rt, n, ProcessBody(ExtraJob{}), options(), said);
    } else {
      expect_told(rt, n, ProcessBody(CommonJob{}), options(), said);
    }
  }
  healthy_job(rt, 3);
}

// Node `odd` passes other RunOptions that the nodes must share: rings of
// another capacity (another credit window) or another placement (ranks
// routed to other cores).
TEST(MpiFaults, NodesPassingDifferentRunOptionsAreEachNamed) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  for (std::uint64_t trial = 0; trial < 4; ++trial) {
    auto g = draw(4, trial);
    const std::uint32_t odd = static_cast<std::uint32_t>(pick(g, rt.nodes()));
    const bool rings = pick(g, 2) == 0;
    const std::size_t capacity = 1 + pick(g, 512);
    RunOptions o = options();
    if (rt.node() == odd) {
      if (rings) {
        o.ring_capacity = capacity;
      } else {
        o.placement = Placement::block();
      }
    }
    const std::string said =
        rings ? clause(rt.nodes(), "has rings of ", "of ",
                       [&](std::uint32_t k) { return std::to_string(k == odd ? capacity : 1024) + " cells"; })
              : clause(rt.nodes(), "places ranks ", "",
                       [&](std::uint32_t k) { return std::string(k == odd ? "block" : "round-robin"); });
    Watchdog watchdog("run options, trial " + std::to_string(trial));
    expect_told(
        rt, 4 * rt.nodes(), [](Process& p) -> Task<void> { co_await p.barrier(); }, o, said);
  }
  healthy_job(rt, 4);
}

// Node `odd`'s call of run() is refused there alone (an invalid ring
// capacity), while the others start the job and wait for it; its next call
// pairs with theirs, and every node is told that the nodes count their calls
// differently. The nodes then count on together: the next job runs.
TEST(MpiFaults, ACallRefusedOnOneNodeIsToldAtItsNextCall) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  auto g = draw(5, 0);
  const std::uint32_t odd = static_cast<std::uint32_t>(pick(g, rt.nodes()));
  const Rank n = 2 * rt.nodes();
  auto body = [](Process& p) -> Task<void> { co_await p.barrier(); };
  Watchdog watchdog("a refused call");
  if (rt.node() == odd) {
    RunOptions bad = options();
    bad.ring_capacity = 0;
    EXPECT_NE(sytest::invalid_argument_of([&] { rt.run(n, body, bad); }).find("ring_capacity must be"),
              std::string::npos);
  }
  const std::string error = sytest::invalid_argument_of([&] { rt.run(n, body, options()); });
  // "node 0 makes its call C of run(), node 1 its call C + 1 of run()" with
  // node 1 odd: C, this process's count before the scenario, read from it.
  const std::size_t at = error.find("node 0 makes its call ");
  ASSERT_NE(at, std::string::npos) << error;
  const std::uint64_t before = std::strtoull(error.c_str() + at + 22, nullptr, 10) - (odd == 0 ? 1 : 0);
  EXPECT_EQ(error, kDisagree + clause(rt.nodes(), "makes its call ", "its call ", [&](std::uint32_t k) {
                     return std::to_string(before + (k == odd ? 1 : 0)) + " of run()";
                   }));
  healthy_job(rt, 5);
}

// --- create() misused --------------------------------------------------------

// A ring of 64-byte messages among n processes.
CommMatrix ring_matrix(Rank n) {
  CommMatrix m(n);
  for (Rank r = 0; r < n; ++r) m.set(r, (r + 1) % n, 64);
  return m;
}

// Member `odd` (drawn, on any node) passes ExchangePlan::create() other
// options than the others: every member, on every node, is told at once,
// naming rank 0's options and the odd member's.
TEST(MpiFaults, MembersPassingCreateDifferentOptionsAreToldOnEveryNode) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  struct Odd {
    ExchangePlanOptions options;
    const char* said;
  };
  const Odd odds[]{{{.scheduler = "ac"}, "scheduler 'ac', compiled, pull"},
                   {{.scheduler = "cgm"}, "scheduler 'cgm', compiled, pull"},
                   {{.execution = ExchangeExecution::messages}, "scheduler 'optimal', on messages, pull"},
                   {{.copy_side = CopySide::sender}, "scheduler 'optimal', compiled, push"},
                   {{.strict = true}, "scheduler 'optimal', compiled, pull, strict"}};
  for (std::uint64_t trial = 0; trial < 5; ++trial) {
    auto g = draw(6, trial);
    const Rank n = 2 * rt.nodes();
    const Rank odd = 1 + pick(g, n - 1);
    const Odd& o = odds[pick(g, std::size(odds))];
    const CommMatrix ring = ring_matrix(n);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": rank " + std::to_string(odd) + " " + o.said);
    Watchdog watchdog("create() options, trial " + std::to_string(trial));
    const JobFailure e = sytest::run_failing(
        rt, n,
        [&](Process& p) -> Task<void> {
          const ExchangePlanOptions mine = p.rank() == odd ? o.options : ExchangePlanOptions{};
          const ExchangePlan plan = co_await ExchangePlan::create(p, ring.row(p.rank()), mine);
          SY_CHECK(false, "create() returned on rank " << p.rank());
        },
        options());
    EXPECT_LT(e.took, kBound);
    // Every member throws; a node's own error or another node's comes first.
    EXPECT_NE(e.error.find(": the members pass different options: rank 0 scheduler 'optimal', compiled, pull, seed 1, "
                           "max_phases 0; rank " +
                           std::to_string(odd) + " " + o.said),
              std::string::npos)
        << e.error;
    EXPECT_NE(e.error.find("(1 member(s) differ from rank 0)"), std::string::npos) << e.error;
  }
  healthy_job(rt, 6);
}

// Only the processes of node 0 call create(): they wait in its collectives
// for members that finished. Node 0 stalls (its StallError names them, each
// in a collective), every other node is told that node 0 stalled.
TEST(MpiFaults, CreateCalledByTheMembersOfOneNodeOnlyStallsThereAndIsToldEverywhere) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  const Rank n = 2 * rt.nodes();
  const CommMatrix ring = ring_matrix(n);
  RunOptions o = options();
  o.stall_timeout = std::chrono::milliseconds(1000);
  Watchdog watchdog("create() by some members");
  const JobFailure e = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        if (p.rank() >= 2) co_return;  // the processes of nodes 1 and up never call it
        const ExchangePlan plan = co_await ExchangePlan::create(p, ring.row(p.rank()));
      },
      o);
  EXPECT_LT(e.took, kBound);
  if (rt.node() == 0) {
    EXPECT_EQ(e.kind, JobFailure::kStall) << e.error;
    EXPECT_NE(e.error.find("; 2 process(es) blocked:"), std::string::npos) << e.error;
    for (const char* rank : {"\n  rank 0 (core ", "\n  rank 1 (core "}) {
      EXPECT_NE(e.error.find(rank), std::string::npos) << e.error;
    }
    EXPECT_NE(e.error.find("(a collective)"), std::string::npos) << e.error;
  } else {
    EXPECT_EQ(e.kind, JobFailure::kRemote) << e.error;
    EXPECT_EQ(e.error, "switchyard: node 0 stalled (its processes are named in its own error)");
  }
  healthy_job(rt, 7);
}

// A communicator kept from one job and used in the next (the plan's runs go
// through it): every process is told which job made it and that it ended.
TEST(MpiFaults, ACommunicatorKeptPastItsJobIsToldOnEveryNode) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1) GTEST_SKIP() << kNeedsNodes;
  const Rank n = 2 * rt.nodes();
  const CommMatrix ring = ring_matrix(n);
  std::vector<Communicator> kept(n);
  const std::uint64_t made =
      rt.run(
            n, [&](Process& p) -> Task<void> { kept[p.rank()] = co_await p.world().dup(); }, options())
          .job;
  Watchdog watchdog("a communicator kept past its job");
  const JobFailure e = sytest::run_failing(
      rt, n,
      [&](Process& p) -> Task<void> {
        const ExchangePlan plan = co_await ExchangePlan::create(p, ring.row(p.rank()));
        ExchangeBuffers b(ring, p.rank(), 5);
        sytest::BufferForms forms(b, n);
        co_await forms.run(plan, kept[p.rank()], 0);
      },
      options());
  EXPECT_LT(e.took, kBound);
  EXPECT_NE(e.error.find("a communicator of job " + std::to_string(made) + " (rank "), std::string::npos) << e.error;
  EXPECT_NE(e.error.find(": job " + std::to_string(made) + " has ended, or runs elsewhere"), std::string::npos)
      << e.error;
  healthy_job(rt, 8);
}

// --- A node killed ------------------------------------------------------------

// Rank `victim`'s node (drawn) kills itself with SIGKILL after a drawn delay
// in the middle of a job of ring traffic between every node. Run only by the
// ctest entries mpi.faults.kill.npR (SWITCHYARD_TEST_MPI_KILL=1), which expect
// mpirun to end every node, non-zero, naming the killed one, within the bound.
TEST(MpiFaultsKill, ANodeKilledMidJob) {
  Runtime& rt = runtime();
  if (rt.nodes() == 1 || !std::getenv("SWITCHYARD_TEST_MPI_KILL")) {
    GTEST_SKIP() << "run by ctest mpi.faults.kill (ends the program with SIGKILL)";
  }
  auto g = draw(7, 0);
  const std::uint32_t victim = static_cast<std::uint32_t>(pick(g, rt.nodes()));
  const auto delay = std::chrono::milliseconds(50 + pick(g, 400));
  const Rank n = 2 * rt.nodes();
  Watchdog watchdog("the job whose node was killed");
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const auto start = std::chrono::steady_clock::now();
        const Rank right = (p.rank() + 1) % n, left = (p.rank() + n - 1) % n;
        for (std::uint64_t k = 0;; ++k) {
          if (rt.node() == victim && p.rank() % 2 == 0 && std::chrono::steady_clock::now() - start >= delay) {
            const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch());
            std::fprintf(stderr, "fault harness: node %u is killed at %lld ms\n", victim,
                         static_cast<long long>(at.count()));
            std::raise(SIGKILL);
          }
          RecvTicket r = p.post_recv(left, 1);
          co_await p.send(right, sytest::pattern(5000, sytest::message_key(p.rank(), right, k)), 1);
          co_await p.wait(r);
          sytest::check_message(r.take_message(), left, p.rank(), k, 5000, "the ring");
        }
      },
      options());
  ADD_FAILURE() << "the job returned: its node " << victim << " was killed";
}

}  // namespace
