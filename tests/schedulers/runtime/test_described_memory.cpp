// Exchange hooks that describe their memory (exchange_hooks.hpp): a compiled
// run of a plan from the whole pattern copies each message straight from its
// sender's scattered blocks into its receiver's, packing nothing; the message
// execution and plans from create() pack and unpack through the same hooks'
// buffers; hooks that only pack work everywhere as before. Every byte of every
// run is checked, and so is every byte of the receive regions that no message
// owns. Descriptions that do not fit the plan are refused, naming the rank and
// the entry, and the plan stays usable.

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <vector>

#include "disjoint_runs.hpp"  // schedulers/runtime/src
#include "exchange_cases.hpp"
#include "exchange_forms.hpp"
#include "scattered_hooks.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;
using sytest::Execution;
using sytest::kExecutions;
using sytest::ScatteredHooks;

// Block sizes (send side, receive side) of the scattered layouts: pieces that
// never line up between the sides, single bytes against whole messages,
// whole messages on both sides (merged into one copy each), and 8 bytes
// against 8 (pieces that line up).
const std::vector<std::pair<std::uint64_t, std::uint64_t>> kBlocks{{3, 5}, {1, 0}, {0, 0}, {8, 8}};

// `runs` runs of `plan` in one job, each checked: every byte in, no gap
// written, and the buffers and packing hooks called only where a run uses
// buffers (each message once each way), never in a direct one.
void run_scattered(const CommMatrix& m, const ExchangePlan* global, const ExchangePlanOptions& options,
                   std::pair<std::uint64_t, std::uint64_t> blocks, bool describe, bool direct, int runs,
                   std::size_t ring_capacity = 1024) {
  sytest::runtime().run(
      m.size(),
      [&](Process& p) -> Task<void> {
        ScatteredHooks hooks(m, p.rank(), 17, blocks.first, blocks.second, describe);
        std::optional<ExchangePlan> mine;
        if (!global) mine = co_await ExchangePlan::create(p, m.row(p.rank()), options);
        const ExchangePlan& plan = global ? *global : *mine;
        const int messages = static_cast<int>(m.row(p.rank()).size() + m.column(p.rank()).size());
        for (int k = 0; k < runs; ++k) {
          hooks.reset();
          co_await p.barrier();
          co_await plan.run(p, hooks);
          if (auto wrong = hooks.wrong()) throw Error("run " + std::to_string(k) + ": " + *wrong);
          const int want = direct ? 0 : messages;
          SY_CHECK(hooks.hook_calls() == want, "rank " << p.rank() << ", run " << k << ": " << hooks.hook_calls()
                                                       << " calls to before_send and after_receive, not " << want);
          SY_CHECK(direct ? hooks.buffer_calls() == 0 : hooks.buffer_calls() >= messages,
                   "rank " << p.rank() << ", run " << k << ": " << hooks.buffer_calls() << " calls to the buffers");
        }
      },
      sytest::run_options(ring_capacity));
}

std::vector<sytest::Case> cases() {
  std::vector<sytest::Case> all{{"fig7_n16", sytest::uniform_case(16)},
                                {"nonuniform_n16", sytest::nonuniform_case(16)}};
  for (Rank n : {Rank{1}, Rank{2}, Rank{3}, Rank{7}}) {
    for (auto& c : sytest::special_cases(n)) all.push_back({c.name + "_n" + std::to_string(n), std::move(c.m)});
  }
  return all;
}

class Described : public ::testing::TestWithParam<std::tuple<std::string, Execution>> {};

// Plans from the whole pattern: hooks that describe memory run direct in a
// compiled run, through their buffers in the message execution; hooks that
// only pack through their buffers in both.
TEST_P(Described, EveryByteOfEveryRunDirectOrThroughBuffers) {
  const auto& [scheduler, how] = GetParam();
  const std::vector<sytest::Case> all = cases();
  for (std::size_t c = 0; c < all.size(); ++c) {
    SCOPED_TRACE(all[c].name);
    ExchangePlanOptions options;
    options.scheduler = scheduler;
    const ExchangePlan plan(all[c].m, sytest::with_execution(options, how));
    // DRS_N takes a busy lock per piece, in one pass over a sender's pieces:
    // under a sanitizer, byte-sized pieces take minutes and stall the job.
    const bool few_pieces = sytest::kSanitized && scheduler == std::string("drsn");
    const auto blocks = few_pieces ? kBlocks[2 + c % 2] : kBlocks[c % kBlocks.size()];
    const bool direct = how.execution == ExchangeExecution::compiled;
    const int runs = sytest::kSanitized ? 2 : 6;
    run_scattered(all[c].m, &plan, plan.options(), blocks, true, direct, runs, how.ring_capacity);
    run_scattered(all[c].m, &plan, plan.options(), blocks, false, false, runs / 2, how.ring_capacity);
    // The same plan in a second job: the compiled copies are the plan's, the engine's programs the job's.
    run_scattered(all[c].m, &plan, plan.options(), blocks, true, direct, runs / 2, how.ring_capacity);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, Described,
                         ::testing::Combine(::testing::Values("ac", "drsn", "cgm", "optimal", "optimal-bytes"),
                                            ::testing::ValuesIn(kExecutions)),
                         [](const auto& info) {
                           return sytest::identifier(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
                         });

// Every message in `pieces` pieces of about equal size, piece q in phase
// pieces - 1 - q (its last piece first), all of a process's messages in each
// phase (contention): the copies pair the blocks from inside the messages on.
TEST(DescribedMemory, MessagesSplitOverPhases) {
  const CommMatrix m = sytest::nonuniform_case(16);
  for (const std::uint64_t pieces : {2u, 7u}) {
    Schedule s{m.size(), "split", std::vector<Phase>(pieces)};
    for (Rank i = 0; i < m.size(); ++i) {
      for (const MatrixEntry& e : m.row(i)) {
        for (std::uint64_t q = 0, at = 0; q < pieces; ++q) {
          const std::uint64_t end = e.bytes * (q + 1) / pieces;
          if (end > at) s.phases[pieces - 1 - q].push_back({i, e.peer, at, end - at});
          at = end;
        }
      }
    }
    const ExchangePlan plan = ExchangePlan::from_schedule(m, std::move(s));
    for (const Execution& how : kExecutions) {
      if (how.execution == ExchangeExecution::messages) continue;
      SCOPED_TRACE(std::to_string(pieces) + " pieces, " + how.name);
      const ExchangePlanOptions options = sytest::with_execution(plan.options(), how);
      for (const auto& blocks : kBlocks) {  // a plan for each layout: it keeps the first one described
        const ExchangePlan run = ExchangePlan::from_schedule(m, *plan.schedule(), options);
        run_scattered(m, &run, options, blocks, true, true, 3);
      }
    }
  }
}

// A plan from create() holds one member's part: hooks that describe memory
// run through their buffers there, compiled or not.
TEST(DescribedMemory, CreatePlansUseTheBuffers) {
  for (const Execution& how : kExecutions) {
    for (const std::string scheduler : {"ac", "optimal"}) {
      SCOPED_TRACE(how.name + ", " + scheduler);
      ExchangePlanOptions options;
      options.scheduler = scheduler;
      run_scattered(sytest::nonuniform_case(16), nullptr, sytest::with_execution(options, how), {3, 5}, true, false, 3,
                    how.ring_capacity);
    }
  }
}

// The run-against-run check of receive blocks (disjoint_runs.hpp) against
// every pair of blocks: random runs of one stride (or single blocks), small
// enough to list, and runs near the end of the 64-bit range.
TEST(DescribedMemory, RunsMeetExactlyWhereTheirBlocksDo) {
  namespace sd = switchyard::schedulers::detail;
  std::mt19937_64 rng(7);
  const auto pick = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  const auto blocks_meet = [](const StridedRun& a, const StridedRun& b) {
    for (std::uint64_t i = 0; i < a.count; ++i) {
      for (std::uint64_t j = 0; j < b.count; ++j) {
        const std::uint64_t as = a.offset + i * a.stride, bs = b.offset + j * b.stride;
        if (as < bs + b.length && bs < as + a.length) return true;
      }
    }
    return false;
  };
  int met = 0, apart = 0;
  for (int t = 0; t < 20000; ++t) {
    const std::uint64_t stride = pick(1, 12);
    auto run = [&] {
      StridedRun r{pick(0, 60), pick(1, 12), stride, pick(1, 6)};
      if (r.count == 1) r.stride = pick(0, 30);  // a single block's stride is never read
      if (r.count > 1) r.length = std::min(r.length, stride);  // its own blocks apart
      return r;
    };
    const StridedRun a = run(), b = run();
    const bool want = blocks_meet(a, b);
    ASSERT_EQ(sd::runs_meet(a, b), want) << "runs (" << a.offset << ", " << a.length << ", " << a.stride << ", "
                                         << a.count << ") and (" << b.offset << ", " << b.length << ", " << b.stride
                                         << ", " << b.count << ")";
    ++(want ? met : apart);
  }
  EXPECT_GT(met, 1000);
  EXPECT_GT(apart, 1000);
  // Near 2^64: the last blocks of the range, and one block over all of them.
  constexpr std::uint64_t kTop = ~std::uint64_t{0};
  const StridedRun high{kTop - 160, 16, 32, 5}, interleaved{kTop - 144, 16, 32, 4}, over{kTop - 200, 200, 0, 1};
  EXPECT_FALSE(sd::runs_meet(high, interleaved));
  EXPECT_TRUE(sd::runs_meet(high, over));
  EXPECT_TRUE(sd::runs_meet(over, interleaved));
  // Whole descriptions: one stride, many blocks per run; another stride or
  // blocks longer than their stride go to the merge by offset (nullopt).
  const std::vector<StridedRun> fig9{{0, 16, 64, 1000}, {32, 16, 64, 1000}, {64000, 8, 0, 1}};
  EXPECT_EQ(sd::runs_disjoint(fig9), std::optional<bool>(true));
  const std::vector<StridedRun> clash{{0, 16, 64, 1000}, {48, 32, 64, 1000}};
  EXPECT_EQ(sd::runs_disjoint(clash), std::optional<bool>(false));
  const std::vector<StridedRun> strides{{0, 16, 64, 1000}, {32, 16, 128, 1000}};
  EXPECT_EQ(sd::runs_disjoint(strides), std::nullopt);
  const std::vector<StridedRun> long_blocks{{0, 80, 64, 1000}};
  EXPECT_EQ(sd::runs_disjoint(long_blocks), std::nullopt);
}

// Hooks whose description does not fit: `fault` says how.
class FaultyHooks final : public ScatteredHooks {
 public:
  enum class Fault { extra_byte, short_region, overlap, self_overlap };
  FaultyHooks(const CommMatrix& m, Rank me, Fault fault) : ScatteredHooks(m, me, 5, 3, 5, true), fault_(fault) {}
  void describe_send(std::size_t i, std::vector<StridedRun>& runs) override {
    ScatteredHooks::describe_send(i, runs);
    if (fault_ == Fault::extra_byte && i == 1) runs.push_back({0, 1, 0, 1});
  }
  void describe_recv(std::size_t j, std::vector<StridedRun>& runs) override {
    ScatteredHooks::describe_recv(j, runs);
    if (fault_ == Fault::overlap && j == 1) runs.front().offset = 0;  // entry 0's first block
    if (fault_ == Fault::self_overlap && j == 1) {  // its bytes, all at its first byte: a stride of 0
      std::uint64_t bytes = 0;
      for (const StridedRun& r : runs) bytes += r.length * r.count;
      runs = {StridedRun{runs.front().offset, 1, 0, bytes}};
    }
  }
  ExchangeMemory memory() override {
    ExchangeMemory m = ScatteredHooks::memory();
    if (fault_ == Fault::short_region) m.recv = m.recv.first(m.recv.size() - 4);  // past its 3 bytes of gap
    return m;
  }

 private:
  Fault fault_;
};

TEST(DescribedMemory, DescriptionsThatDoNotFitAreRefusedNamingRankAndEntry) {
  const CommMatrix m = sytest::uniform_case(16);
  const std::vector<std::pair<FaultyHooks::Fault, std::string>> faults{
      {FaultyHooks::Fault::extra_byte, "send entry 1"},
      {FaultyHooks::Fault::short_region, "receive region has"},
      {FaultyHooks::Fault::overlap, "receive entry 0"},
      {FaultyHooks::Fault::self_overlap, "receive entry 1"}};
  for (const auto& [fault, what] : faults) {
    SCOPED_TRACE(what);
    // A plan of its own: a description that fits is kept, and never asked for again.
    const ExchangePlan plan(m, ExchangePlanOptions{.scheduler = "optimal"});
    try {
      sytest::runtime().run(
          16,
          [&](Process& p) -> Task<void> {
            std::optional<FaultyHooks> bad;
            std::optional<ScatteredHooks> good;
            if (p.rank() == 3) {
              bad.emplace(m, p.rank(), fault);
            } else {
              good.emplace(m, p.rank(), 5, 3, 5, true);
            }
            ScatteredHooks& hooks = bad ? static_cast<ScatteredHooks&>(*bad) : *good;
            hooks.reset();
            co_await plan.run(p, hooks);
          },
          sytest::run_options());
      ADD_FAILURE() << "the run was not refused";
    } catch (const InvalidArgument& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find("rank 3"), std::string::npos) << text;
      EXPECT_NE(text.find(what), std::string::npos) << text;
    }
    // Refused descriptions are not kept: the plan runs with good ones.
    run_scattered(m, &plan, plan.options(), {3, 5}, true, true, 2);
  }
}

}  // namespace
