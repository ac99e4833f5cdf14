// The structured-grid halo (GridHalo): every ghost element of every process
// checked against the global array after forward (faces only, or with edges
// and corners; ghosts that no neighbour owns left as they were), every
// interior element after reverse against sums made sequentially; for 1-, 2-
// and 3-D grids, periodic and not, ghost widths 1 and 2, uneven blocks, 1 to
// 8 processes on one core and on two, by compiled runs (which copy straight
// between the arrays) and by message runs (which pack). Then dims_create,
// bad shapes and arrays, and runs after the first that allocate nothing.

#include <switchyard/halo/grid_halo.hpp>
#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "allocation_counter.hpp"  // every allocation of the program, counted
#include "exchange_cases.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::halo;
namespace sys = switchyard::schedulers;

Runtime& one_core() {
  static Runtime rt(RuntimeOptions{{sytest::runtime().cores().front()}});
  return rt;
}

RunOptions run_options() {
  RunOptions o = sytest::run_options();
  o.strict = true;  // a halo leaves no message behind
  return o;
}

// The value of global element (i, j, k) (the user's dimensions, unused ones 0).
std::uint64_t value_of(const std::array<std::uint64_t, 3>& e) { return 1 + e[0] * 1'000'000 + e[1] * 1'000 + e[2]; }
// What rank q's ghost at local index l contributes in the reverse test.
std::uint64_t contribution(Rank q, std::uint64_t l) { return (std::uint64_t{q} + 1) << 32 | (l * 7 + 3); }
constexpr std::uint64_t kPoison = ~std::uint64_t{0};

// Where local element `l` of rank r's array lies: its coordinates in the
// array, whether it is interior, and the global element a neighbour owns
// there (wrapped in periodic dimensions), if one does.
struct Where {
  std::array<std::uint64_t, 3> local{};
  bool interior = true;
  bool owned_elsewhere = false;  // a ghost that forward fills
  std::array<std::uint64_t, 3> global{};
};

Where where(const GridShape& s, const GridBlock& b, std::uint64_t l) {
  Where w;
  for (int d = s.dims - 1; d >= 0; --d) {
    w.local[d] = l % b.local[d];
    l /= b.local[d];
  }
  int outside = 0;
  bool exists = true;
  for (int d = 0; d < s.dims; ++d) {
    const auto g = static_cast<std::int64_t>(b.first[d]) + static_cast<std::int64_t>(w.local[d]) - s.ghost[d];
    const bool out = w.local[d] < s.ghost[d] || w.local[d] >= s.ghost[d] + b.size[d];
    outside += out;
    const auto extent = static_cast<std::int64_t>(s.extents[d]);
    if (g < 0 || g >= extent) exists = exists && s.periodic[d];
    w.global[d] = static_cast<std::uint64_t>((g + extent) % extent);
  }
  w.interior = outside == 0;
  w.owned_elsewhere = !w.interior && exists && (outside == 1 || s.corners);
  return w;
}

std::uint64_t index_of(const GridShape& s, const std::array<std::uint64_t, 3>& e) {
  std::uint64_t i = 0;
  for (int d = 0; d < s.dims; ++d) i = i * s.extents[d] + e[d];
  return i;
}

// The interiors after reverse, as global elements: start value plus every
// ghost copy's contribution, summed in any order (integers: exact).
std::vector<std::uint64_t> reverse_sums(const GridHalo<std::uint64_t>& h) {
  const GridShape& s = h.shape();
  std::uint64_t total = 1;
  for (int d = 0; d < s.dims; ++d) total *= s.extents[d];
  std::vector<std::uint64_t> sums(total, 0);
  for (Rank r = 0; r < h.processes(); ++r) {
    const GridBlock& b = h.block(r);
    for (std::uint64_t l = 0; l < h.local_elements(r); ++l) {
      const Where w = where(s, b, l);
      if (w.interior) sums[index_of(s, w.global)] += value_of(w.global);
      if (w.owned_elsewhere) sums[index_of(s, w.global)] += contribution(r, l);
    }
  }
  return sums;
}

// The split phase of forward: started, the interior read and checked (the
// process's own meanwhile) with yields that let the others start and wait,
// then the wait.
Task<void> split_forward(const GridHalo<std::uint64_t>& h, Process& p, std::span<std::uint64_t> a,
                         std::span<const Where> at, const std::string& what) {
  h.start_forward(p, a);
  for (int y = 0; y < 1 + static_cast<int>(p.rank() % 3); ++y) {
    for (std::uint64_t l = 0; l < a.size(); ++l) {
      if (at[l].interior) SY_CHECK(a[l] == value_of(at[l].global), what << ": interior " << l << " during the split");
    }
    co_await p.yield();
  }
  co_await h.wait_forward(p);
}

// One job: twice, forward checked on every element, then reverse checked on
// every interior element; `split`: forward through its split phase.
void check_grid(Runtime& rt, const GridShape& shape, Rank processes, sys::ExchangePlanOptions options = {},
                bool split = false) {
  const GridHalo<std::uint64_t> h(shape, processes, options);
  const std::vector<std::uint64_t> sums = reverse_sums(h);
  std::ostringstream name;
  name << shape.dims << "-D, " << processes << " processes";
  const std::string what = name.str();
  rt.run(
      processes,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        const GridBlock& b = h.block(me);
        std::vector<std::uint64_t> a(h.local_elements(me));
        std::vector<Where> at(a.size());
        for (std::uint64_t l = 0; l < a.size(); ++l) at[l] = where(shape, b, l);
        for (int round = 0; round < (split ? 3 : 2); ++round) {
          for (std::uint64_t l = 0; l < a.size(); ++l) a[l] = at[l].interior ? value_of(at[l].global) : kPoison;
          if (split) {
            co_await split_forward(h, p, a, at, what);
          } else {
            co_await h.forward(p, a);
          }
          for (std::uint64_t l = 0; l < a.size(); ++l) {
            const std::uint64_t want = at[l].interior || at[l].owned_elsewhere ? value_of(at[l].global) : kPoison;
            SY_CHECK(a[l] == want, what << ": rank " << me << " element " << l << " is " << a[l] << ", not " << want);
          }
          for (std::uint64_t l = 0; l < a.size(); ++l) {
            if (!at[l].interior) a[l] = at[l].owned_elsewhere ? contribution(me, l) : kPoison;
          }
          co_await h.reverse(p, a, std::plus<>{});
          for (std::uint64_t l = 0; l < a.size(); ++l) {
            if (!at[l].interior) continue;
            const std::uint64_t want = sums[index_of(shape, at[l].global)];
            SY_CHECK(a[l] == want,
                     what << ": reverse: rank " << me << " element " << l << " is " << a[l] << ", not " << want);
          }
        }
      },
      run_options());
}

GridShape shape_of(int dims, std::array<std::uint64_t, 3> extents, std::array<std::uint32_t, 3> ghost,
                   std::array<bool, 3> periodic, bool corners) {
  GridShape s;
  s.dims = dims;
  s.extents = extents;
  s.ghost = ghost;
  s.periodic = periodic;
  s.corners = corners;
  return s;
}

// Every combination of the test's grids for one runtime and execution.
void check_every_grid(Runtime& rt, sys::ExchangeExecution execution, bool split = false) {
  sys::ExchangePlanOptions options;
  options.execution = execution;
  for (const Rank p : {1u, 2u, 3u, 4u, 6u, 8u}) {
    for (const bool periodic : {false, true}) {
      for (const std::uint32_t g : {1u, 2u}) {
        SCOPED_TRACE("P=" + std::to_string(p) + " periodic=" + std::to_string(periodic) +
                     " ghost=" + std::to_string(g));
        // Uneven blocks everywhere: extents that no process count divides.
        check_grid(rt, shape_of(1, {37}, {g}, {periodic}, false), p, options, split);
        for (const bool corners : {false, true}) {
          check_grid(rt, shape_of(2, {19, 23, 0}, {g, g}, {periodic, false}, corners), p, options, split);
          check_grid(rt, shape_of(2, {17, 13, 0}, {g, 1}, {periodic, periodic}, corners), p, options, split);
          check_grid(rt, shape_of(3, {11, 9, 7}, {g, 1, g}, {periodic, true, false}, corners), p, options, split);
        }
      }
    }
  }
}

TEST(GridHalo, EveryGridOnOneCore) { check_every_grid(one_core(), sys::ExchangeExecution::compiled); }
TEST(GridHalo, EveryGridOnTwoCores) { check_every_grid(sytest::runtime(), sys::ExchangeExecution::compiled); }
// Runs through buffers: the hooks pack and unpack (as across MPI nodes).
TEST(GridHalo, EveryGridByMessages) { check_every_grid(sytest::runtime(), sys::ExchangeExecution::messages); }

// The split phase: every ghost as forward gives it, on one core, on two and by messages.
TEST(GridHalo, SplitPhaseOnOneCore) { check_every_grid(one_core(), sys::ExchangeExecution::compiled, true); }
TEST(GridHalo, SplitPhaseOnTwoCores) { check_every_grid(sytest::runtime(), sys::ExchangeExecution::compiled, true); }
TEST(GridHalo, SplitPhaseByMessages) { check_every_grid(sytest::runtime(), sys::ExchangeExecution::messages, true); }

// Far more processes than cores: a 2-D periodic grid in 64 blocks.
TEST(GridHalo, SplitPhaseWithManyProcesses) {
  check_grid(sytest::runtime(), shape_of(2, {67, 45, 0}, {1, 2}, {true, true}, true), 64, {}, true);
}

// A second start before the wait, and a wait without a start, refused with their messages.
TEST(GridHalo, SplitPhaseMisuseIsRefused) {
  const GridHalo<double> h(shape_of(2, {16, 16, 0}, {1, 1}, {}, false), 4);
  for (const bool second_start : {true, false}) {
    std::string error = "(accepted)";
    try {
      sytest::runtime().run(4, [&](Process& p) -> Task<void> {
        std::vector<double> a(h.local_elements(p.rank()));
        if (second_start || p.rank() != 1) h.start_forward(p, a);
        if (second_start && p.rank() == 1) h.start_forward(p, a);
        co_await h.wait_forward(p);
      });
    } catch (const InvalidArgument& e) {
      error = e.what();
    }
    EXPECT_NE(error.find(second_start ? "start_forward on rank 1: a second start before the wait"
                                      : "wait_forward on rank 1: no start to wait for"),
              std::string::npos)
        << error;
  }
  // The failed jobs' starts are over: a new job starts and waits.
  sytest::runtime().run(4, [&](Process& p) -> Task<void> {
    std::vector<double> a(h.local_elements(p.rank()), 1.0);
    h.start_forward(p, a);
    co_await h.wait_forward(p);
  });
}

// A second start refused while the first is in flight (and a forward or a
// reverse then, in turn): its process's array dies as the refusal unwinds, so
// the other core must have stopped copying out of it first (under ASan, a
// heap-use-after-free otherwise). Rank 1's ghost
// column box is 65536 rows of the other core's copies (milliseconds), which
// rank 1's work before its second start (without a yield) lets begin; the
// first forward of each job makes the starts publish at once. Then a job's
// forward is checked.
TEST(GridHalo, ASecondStartStopsTheOtherCoresCopiesBeforeItUnwinds) {
  GridShape shape = shape_of(2, {65536, 64, 0}, {0, 8}, {}, false);
  shape.processes = {1, 2, 0};  // cut across the rows
  const GridHalo<double> h(shape, 2);
  for (int round = 0; round < 12; ++round) {
    const char* misuse = round % 3 == 0   ? "GridHalo::start_forward"
                         : round % 3 == 1 ? "GridHalo::forward"
                                          : "GridHalo::reverse";
    std::string error = "(accepted)";
    try {
      sytest::runtime().run(2, [&](Process& p) -> Task<void> {
        std::vector<double> a(h.local_elements(p.rank()), 1.0 + p.rank());
        co_await h.forward(p, a);
        h.start_forward(p, a);
        if (p.rank() == 1) {
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
          while (std::chrono::steady_clock::now() < until) {
          }
          if (round % 3 == 0) h.start_forward(p, a);
          if (round % 3 == 1) co_await h.forward(p, a);
          if (round % 3 == 2) co_await h.reverse(p, a, std::plus<>{});
        }
        co_await h.wait_forward(p);
      });
    } catch (const InvalidArgument& e) {
      error = e.what();
    }
    EXPECT_NE(error.find(std::string(misuse) + " on rank 1: a second start before the wait"), std::string::npos)
        << error;
  }
  sytest::runtime().run(2, [&](Process& p) -> Task<void> {
    std::vector<double> a(h.local_elements(p.rank()), 1.0 + p.rank());
    h.start_forward(p, a);
    co_await h.wait_forward(p);
    const GridBlock& b = h.block(p.rank());
    const std::uint64_t ghost_column = p.rank() == 0 ? b.local[1] - 1 : 0;  // on the neighbour's side
    for (std::uint64_t i = 0; i < b.local[0]; ++i)
      SY_CHECK(a[i * b.local[1] + ghost_column] == 2.0 - p.rank(), "row " << i << "'s ghost after the failed jobs");
  });
}

TEST(GridHalo, GivenProcessGridsAndSchedulers) {
  for (const char* scheduler : {"optimal", "ac", "drsn"}) {
    sys::ExchangePlanOptions options;
    options.scheduler = scheduler;
    GridShape s = shape_of(2, {20, 30, 0}, {2, 3}, {true, false}, true);
    s.processes = {4, 2};
    check_grid(sytest::runtime(), s, 8, options);
    s.processes = {1, 8};
    check_grid(sytest::runtime(), s, 8, options);
  }
}

TEST(GridHalo, BlocksFollowMpisDistribution) {
  GridShape s = shape_of(2, {10, 7, 0}, {1, 1}, {}, false);
  s.processes = {3, 2};
  const GridHalo<double> h(s, 6);
  // Rank 4 sits at (2, 0): rows 7..9 (10 = 4 + 3 + 3), columns 0..3 (7 = 4 + 3).
  EXPECT_EQ(h.block(4).coords, (std::array<std::uint32_t, 3>{2, 0, 0}));
  EXPECT_EQ(h.block(4).first, (std::array<std::uint64_t, 3>{7, 0, 0}));
  EXPECT_EQ(h.block(4).size, (std::array<std::uint64_t, 3>{3, 4, 0}));
  EXPECT_EQ(h.block(4).local, (std::array<std::uint64_t, 3>{5, 6, 0}));
  EXPECT_EQ(h.local_elements(4), 30u);
  EXPECT_EQ(h.block(0).size, (std::array<std::uint64_t, 3>{4, 4, 0}));
  EXPECT_EQ(h.block(5).size, (std::array<std::uint64_t, 3>{3, 3, 0}));
}

TEST(GridHalo, DimsCreateAsMpi) {
  EXPECT_EQ(dims_create(8, 2), (std::array<std::uint32_t, 3>{4, 2, 0}));
  EXPECT_EQ(dims_create(32, 2), (std::array<std::uint32_t, 3>{8, 4, 0}));
  EXPECT_EQ(dims_create(12, 3), (std::array<std::uint32_t, 3>{3, 2, 2}));
  EXPECT_EQ(dims_create(7, 2), (std::array<std::uint32_t, 3>{7, 1, 0}));
  EXPECT_EQ(dims_create(12, 2, {0, 3, 0}), (std::array<std::uint32_t, 3>{4, 3, 0}));
  EXPECT_EQ(dims_create(6, 1), (std::array<std::uint32_t, 3>{6, 0, 0}));
}

std::string error_of(const GridShape& s, Rank processes) {
  try {
    const GridHalo<double> h(s, processes);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

// Whether `text` says `part` (gtest's matchers are gmock's, not linked here).
::testing::AssertionResult Says(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not say \"" << part << "\"";
}

TEST(GridHalo, BadShapesAreRefused) {
  GridShape s = shape_of(2, {8, 3, 0}, {1, 1}, {}, false);
  s.processes = {2, 4};
  EXPECT_TRUE(Says(error_of(s, 8), "dimension 1: extent 3 is smaller than its 4 processes"));
  s.extents = {8, 9};
  s.ghost = {1, 3};
  EXPECT_TRUE(Says(error_of(s, 8), "dimension 1: ghost width 3 is wider than its smallest block (2 of extent 9"));
  s.ghost = {1, 1};
  EXPECT_TRUE(Says(error_of(s, 16), "multiply to 8, not 16 processes"));
  s.processes = {3, 0};
  EXPECT_TRUE(Says(error_of(s, 8), "do not divide 8 processes (dimension 0: 3)"));
  s.dims = 4;
  EXPECT_TRUE(Says(error_of(s, 8), "dims is 4, not 1, 2 or 3"));
  s.dims = 0;
  EXPECT_TRUE(Says(error_of(s, 8), "dims is 0"));
  EXPECT_EQ(error_of(shape_of(1, {5}, {5}, {true}, false), 1), "(accepted)");
  EXPECT_TRUE(Says(error_of(shape_of(1, {5}, {6}, {true}, false), 1), "ghost width 6 is wider"));
}

TEST(GridHalo, WrongArraysAreRefused) {
  const GridHalo<double> h(shape_of(2, {8, 8, 0}, {1, 1}, {}, false), 4);
  std::vector<std::string> errors(4, "(accepted)");
  sytest::runtime().run(4, [&](Process& p) -> Task<void> {
    // Every rank's array is off by its rank + 1: each refuses before its exchange.
    std::vector<double> a(h.local_elements(p.rank()) + p.rank() + 1);
    try {
      co_await h.forward(p, a);
    } catch (const InvalidArgument& e) {
      errors[p.rank()] = e.what();
    }
    try {
      co_await h.reverse(p, std::span(a).first(h.local_elements(p.rank()) - 1), std::plus<>{});
    } catch (const InvalidArgument& e) {
      errors[p.rank()] += e.what();
    }
  });
  EXPECT_TRUE(Says(errors[2], "forward on rank 2: an array of 39 elements, its block and ghosts have 36"));
  EXPECT_TRUE(Says(errors[2], "reverse on rank 2: an array of 35 elements"));
  EXPECT_TRUE(Says(errors[0], "forward on rank 0: an array of 37 elements"));
}

TEST(GridHalo, WrongCommunicatorIsRefused) {
  const GridHalo<double> h(shape_of(1, {8}, {1}, {}, false), 4);
  std::string error;
  sytest::runtime().run(2, [&](Process& p) -> Task<void> {
    std::vector<double> a(4);
    try {
      co_await h.forward(p, a);
    } catch (const InvalidArgument& e) {
      if (p.rank() == 0) error = e.what();
    }
  });
  EXPECT_TRUE(Says(error, "forward on a communicator of 2 members; the grid has 4 processes"));
}

// Two jobs (on two runtimes) running one halo at once: rank 0 of the second
// is refused while rank 0 of the first waits in its forward for rank 1.
TEST(GridHalo, TwoJobsAtOnceAreRefused) {
  const GridHalo<double> h(shape_of(1, {8}, {1}, {}, false), 2);
  Runtime other(RuntimeOptions{{sytest::runtime().cores().back()}});
  // Release/acquire: `entered` from the first job's rank 0 to this thread,
  // `tried` from the second job to the first job's rank 1.
  std::atomic<bool> entered{false}, tried{false};
  std::thread first([&] {
    one_core().run(2, [&](Process& p) -> Task<void> {
      std::vector<double> a(h.local_elements(p.rank()));
      if (p.rank() == 0) entered.store(true, std::memory_order_release);
      while (p.rank() == 1 && !tried.load(std::memory_order_acquire))
        co_await p.sleep_for(std::chrono::milliseconds(1));
      co_await h.forward(p, a);
    });
  });
  while (!entered.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 0 is in its forward by now
  std::string error = "(accepted)";
  RunOptions options;
  options.stall_timeout = std::chrono::milliseconds(5'000);  // were rank 0 accepted, it would wait for rank 1
  try {
    other.run(
        2,
        [&](Process& p) -> Task<void> {
          if (p.rank() != 0) co_return;
          std::vector<double> a(h.local_elements(0));
          try {
            co_await h.forward(p, a);
          } catch (const InvalidArgument& e) {
            error = e.what();
          }
        },
        options);
  } catch (const std::exception& e) {
    error = e.what();
  }
  tried.store(true, std::memory_order_release);
  first.join();
  EXPECT_TRUE(Says(error, "rank 0 runs the halo in two jobs at once"));
}

// The allocations of a job whose processes each run forward and reverse
// three times, then K times a barrier and (with_runs) one more of each.
std::uint64_t allocations(Runtime& rt, const GridHalo<double>& h, bool with_runs, int runs) {
  std::uint64_t counted = 0;
  rt.run(h.processes(), [&](Process& p) -> Task<void> {
    std::vector<double> a(h.local_elements(p.rank()), 1.0);
    for (int k = 0; k < 3; ++k) {
      co_await h.forward(p, a);
      co_await h.reverse(p, a, std::plus<>{});
    }
    co_await p.barrier();
    if (p.rank() == 0) counted = g_allocations.load();
    for (int k = 0; k < runs; ++k) {
      co_await p.barrier();
      if (with_runs) {
        co_await h.forward(p, a);
        co_await h.reverse(p, a, std::plus<>{});
      }
    }
    co_await p.barrier();
    if (p.rank() == 0) counted = g_allocations.load() - counted;
  });
  return counted;
}

TEST(GridHalo, RunsAfterTheFirstAllocateNothing) {
  for (const auto execution : {sys::ExchangeExecution::compiled, sys::ExchangeExecution::messages}) {
    sys::ExchangePlanOptions options;
    options.execution = execution;
    const GridHalo<double> h(shape_of(3, {12, 10, 9}, {1, 2, 1}, {true, false, true}, true), 6, options);
    const std::uint64_t with = allocations(one_core(), h, true, 20), without = allocations(one_core(), h, false, 20);
    EXPECT_EQ(with, without) << "20 runs on one core allocated " << (with - without) << " times";
    // Across two cores a job's own machinery may allocate now and then; what
    // must not happen is an allocation per run (200 runs of 6 processes here).
    const auto across = static_cast<std::int64_t>(allocations(sytest::runtime(), h, true, 200)) -
                        static_cast<std::int64_t>(allocations(sytest::runtime(), h, false, 200));
    EXPECT_LE(across, 20) << "200 runs across two cores allocated " << across << " times";
  }
}

}  // namespace
