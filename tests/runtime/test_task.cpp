// Task<T>: the lazy, symmetric-transfer coroutine type. Driven here without a
// runtime: the test resumes the outermost task by hand and reads its result.

#include <switchyard/task.hpp>

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace {

using switchyard::Task;

// Runs a task that never suspends on anything external to completion and returns its result.
template <class T>
T run_sync(Task<T>& t) {
  auto h = t.handle();
  EXPECT_TRUE(h);
  EXPECT_FALSE(h.done());
  h.resume();
  EXPECT_TRUE(h.done());
  return t.await_resume();
}

// A one-shot event a coroutine can wait for; fired by the test.
struct Event {
  std::coroutine_handle<> waiter;
  bool set = false;
  struct Awaiter {
    Event& e;
    bool await_ready() const noexcept { return e.set; }
    void await_suspend(std::coroutine_handle<> h) noexcept { e.waiter = h; }
    void await_resume() const noexcept {}
  };
  Awaiter operator co_await() noexcept { return Awaiter{*this}; }
  void fire() {
    set = true;
    if (auto h = std::exchange(waiter, {})) h.resume();
  }
};

// Counts live instances: tells whether coroutine frames were destroyed.
struct Guard {
  static inline int live = 0;
  Guard() { ++live; }
  Guard(const Guard&) { ++live; }
  Guard(Guard&&) noexcept { ++live; }
  ~Guard() { --live; }
};

struct CustomError {
  int code;
};

struct NoDefault {
  explicit NoDefault(int v) : value(v) {}
  NoDefault(const NoDefault&) = delete;
  NoDefault(NoDefault&&) = default;
  int value;
};

Task<int> answer() { co_return 42; }
Task<std::string> greet(std::string who) { co_return "hello " + who; }
Task<std::unique_ptr<int>> boxed(int v) { co_return std::make_unique<int>(v); }
Task<NoDefault> no_default(int v) { co_return NoDefault(v); }

TEST(Task, IsLazyUntilResumed) {
  bool ran = false;
  auto make = [&]() -> Task<void> {
    ran = true;
    co_return;
  };
  Task<void> t = make();
  EXPECT_FALSE(ran) << "a Task must not start before it is awaited";
  EXPECT_FALSE(t.await_ready());
  run_sync(t);
  EXPECT_TRUE(ran);
  EXPECT_TRUE(t.await_ready()) << "a finished task is ready";
}

TEST(Task, ReturnsValues) {
  auto a = answer();
  EXPECT_EQ(run_sync(a), 42);
  auto g = greet("switchyard");
  EXPECT_EQ(run_sync(g), "hello switchyard");
  auto b = boxed(7);
  std::unique_ptr<int> p = run_sync(b);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, 7);
  auto n = no_default(-3);
  EXPECT_EQ(run_sync(n).value, -3);
}

TEST(Task, NestedAwaitsCombineValues) {
  auto inner = [](int x) -> Task<int> { co_return x * 2; };
  auto middle = [&](int x) -> Task<int> {
    int a = co_await inner(x);
    int b = co_await inner(x + 1);
    co_return a + b;
  };
  auto outer = [&]() -> Task<std::vector<int>> {
    std::vector<int> out;
    for (int i = 0; i < 5; ++i) out.push_back(co_await middle(i));
    std::string s = co_await greet("nested");
    out.push_back(static_cast<int>(s.size()));
    co_return out;
  };
  auto t = outer();
  const std::vector<int> want{2, 6, 10, 14, 18, 12};
  EXPECT_EQ(run_sync(t), want);
}

TEST(Task, ExceptionPropagatesToAwaiter) {
  auto thrower = []() -> Task<int> {
    throw std::runtime_error("inner failure");
    co_return 1;
  };
  auto catcher = [&]() -> Task<std::string> {
    try {
      (void)co_await thrower();
    } catch (const std::runtime_error& e) {
      co_return std::string("caught: ") + e.what();
    }
    co_return "not caught";
  };
  auto t = catcher();
  EXPECT_EQ(run_sync(t), "caught: inner failure");
}

TEST(Task, UncaughtExceptionReachesTopWithTypeAndMessage) {
  auto deep = []() -> Task<void> {
    throw std::out_of_range("deep out of range");
    co_return;
  };
  auto mid = [&]() -> Task<int> {
    co_await deep();
    co_return 5;  // never reached
  };
  auto top = [&]() -> Task<int> { co_return co_await mid() + 1; };
  auto t = top();
  t.handle().resume();
  ASSERT_TRUE(t.handle().done());
  EXPECT_TRUE(t.handle().promise().error != nullptr);
  try {
    (void)t.await_resume();
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "deep out of range");
  }
}

TEST(Task, NonStdExceptionTypesSurvive) {
  auto thrower = []() -> Task<void> {
    throw CustomError{17};
    co_return;
  };
  auto t = thrower();
  t.handle().resume();
  try {
    t.await_resume();
    FAIL() << "expected CustomError";
  } catch (const CustomError& e) {
    EXPECT_EQ(e.code, 17);
  }
}

TEST(Task, SuspensionInsideChainResumesTheWholeChain) {
  Event ev;
  std::vector<std::string> log;
  auto leaf = [&]() -> Task<int> {
    log.push_back("leaf waits");
    co_await ev;
    log.push_back("leaf resumed");
    co_return 10;
  };
  auto mid = [&]() -> Task<int> {
    int v = co_await leaf();
    log.push_back("mid got " + std::to_string(v));
    co_return v + 1;
  };
  auto top = [&]() -> Task<int> {
    int v = co_await mid();
    log.push_back("top got " + std::to_string(v));
    co_return v * 3;
  };
  auto t = top();
  t.handle().resume();
  EXPECT_FALSE(t.handle().done()) << "the chain waits for the event";
  ASSERT_EQ(log, std::vector<std::string>{"leaf waits"});
  ev.fire();  // resumes the leaf; completion flows back up by symmetric transfer
  ASSERT_TRUE(t.handle().done());
  EXPECT_EQ(t.await_resume(), 33);
  EXPECT_EQ(log, (std::vector<std::string>{"leaf waits", "leaf resumed", "mid got 10", "top got 11"}));
}

TEST(Task, AwaitingAFinishedTaskDoesNotRerunIt) {
  int runs = 0;
  auto once = [&]() -> Task<int> {
    ++runs;
    co_return 99;
  };
  Task<int> inner = once();
  inner.handle().resume();
  ASSERT_TRUE(inner.await_ready());
  auto outer = [&]() -> Task<int> { co_return co_await std::move(inner); };
  auto t = outer();
  EXPECT_EQ(run_sync(t), 99);
  EXPECT_EQ(runs, 1);
}

TEST(Task, DestroyingASuspendedChainDestroysEveryFrame) {
  Guard::live = 0;
  Event ev;
  {
    auto leaf = [&](Guard) -> Task<int> {
      Guard local;
      co_await ev;
      co_return 1;
    };
    auto mid = [&](Guard g) -> Task<int> {
      Guard local;
      co_return co_await leaf(g);
    };
    auto top = [&]() -> Task<int> {
      Guard local;
      co_return co_await mid(Guard{});
    };
    auto t = top();
    t.handle().resume();
    ASSERT_FALSE(t.handle().done());
    EXPECT_GE(Guard::live, 4) << "guards in the suspended frames";
  }  // t destroyed while suspended
  EXPECT_EQ(Guard::live, 0) << "destroying the outer task must destroy the nested frames too";
  EXPECT_TRUE(ev.waiter) << "the event was never fired";
}

TEST(Task, DestroyingAnUnstartedTaskRunsNothingAndFreesArguments) {
  Guard::live = 0;
  bool ran = false;
  {
    auto make = [&](Guard) -> Task<void> {
      ran = true;
      co_return;
    };
    auto t = make(Guard{});
    EXPECT_GE(Guard::live, 1);
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(Guard::live, 0);
}

TEST(Task, MoveTransfersOwnership) {
  Guard::live = 0;
  auto make = [](Guard, int v) -> Task<int> { co_return v; };
  Task<int> a = make(Guard{}, 1);
  Task<int> b = make(Guard{}, 2);
  EXPECT_EQ(Guard::live, 2);
  a = std::move(b);  // a's old frame is destroyed
  EXPECT_EQ(Guard::live, 1);
  EXPECT_FALSE(b.handle());
  EXPECT_TRUE(b.await_ready()) << "an empty task is trivially ready";
  Task<int> c(std::move(a));
  EXPECT_FALSE(a.handle());
  EXPECT_EQ(run_sync(c), 2);
  c = Task<int>{};
  EXPECT_EQ(Guard::live, 0);
}

Task<std::uint64_t> sum_to(std::uint64_t n) {
  if (n == 0) co_return 0;
  co_return n + co_await sum_to(n - 1);
}

TEST(Task, DeepNestingCompletes) {
  // Deep enough that a stack frame per level without symmetric transfer would
  // overflow an 8 MiB stack in an optimised build.
  const std::uint64_t depth = sytest::kSanitized ? 5'000 : 200'000;
  auto t = sum_to(depth);
  EXPECT_EQ(run_sync(t), depth * (depth + 1) / 2);
}

TEST(Task, ManySequentialAwaitsInALoop) {
  // A million awaits of tasks that complete at once, without the awaiter ever
  // suspending for real: with symmetric transfer compiled as tail calls the
  // stack stays flat. (GCC does not emit those tail calls under ASan, so the
  // sanitizer builds run a shorter loop.)
  const int count = sytest::kSanitized ? 2'000 : 1'000'000;
  auto one = [](int i) -> Task<int> { co_return i & 1; };
  auto loop = [&]() -> Task<long> {
    long s = 0;
    for (int i = 0; i < count; ++i) s += co_await one(i);
    co_return s;
  };
  auto t = loop();
  EXPECT_EQ(run_sync(t), count / 2);
}

// --- the frame cache: where frames come from ---

namespace frame_cache {

using switchyard::detail::FrameCache;

// Allocates `count` blocks of `size` bytes, writes each whole, frees them all.
std::vector<void*> churn(std::size_t count, std::size_t size) {
  std::vector<void*> blocks(count);
  for (auto& b : blocks) {
    b = FrameCache::allocate(size);
    std::memset(b, 0xab, size);
  }
  for (void* b : blocks) FrameCache::deallocate(b);
  return blocks;
}

TEST(FrameCache, FreedBlocksAreReusedWithoutNewMemory) {
  churn(50000, 200);  // the first round may take chunks
  const std::size_t reserved = FrameCache::reserved_bytes();
  EXPECT_GE(reserved, std::size_t{50000} * 200);
  for (int round = 0; round < 5; ++round) churn(50000, 200);
  EXPECT_EQ(FrameCache::reserved_bytes(), reserved) << "the same frames again must come from the freed ones";
}

// What a thread makes in a lane (FrameCache::LaneScope) comes from pages no
// other lane's blocks share, and goes back to that lane: Runtime::run makes
// each core's processes and frames in a lane of their own, so that the
// prefetchers of one core never fetch lines that another core writes. (Lane
// 0, the default, also takes blocks that ended threads gave back, wherever
// they lie; it is made from here too, between the others.)
TEST(FrameCache, LanesKeepToPagesOfTheirOwnAndGetTheirBlocksBack) {
  constexpr std::size_t kPage = 4096;
  const std::size_t sizes[] = {100, 300, 1000};
  std::map<std::uintptr_t, std::set<std::uint32_t>> lanes_of_page;
  std::vector<std::pair<void*, std::uint32_t>> made;
  const auto make_interleaved = [&] {
    for (int i = 0; i < 600; ++i) {
      for (const std::uint32_t lane : {0u, 1u, 2u}) {
        const FrameCache::LaneScope scope(lane);
        const std::size_t size = sizes[i % 3];
        auto* b = static_cast<std::byte*>(FrameCache::allocate(size));
        std::memset(b, static_cast<int>(lane), size);
        made.emplace_back(b, lane);
        const auto first = reinterpret_cast<std::uintptr_t>(b) / kPage,
                   last = (reinterpret_cast<std::uintptr_t>(b) + size - 1) / kPage;
        for (std::uintptr_t page = first; page <= last; ++page) lanes_of_page[page].insert(lane);
      }
    }
  };
  make_interleaved();
  for (const auto& [page, lanes] : lanes_of_page)
    EXPECT_FALSE(lanes.contains(1) && lanes.contains(2)) << "a page shared by lanes";
  std::set<void*> first;
  for (auto [b, lane] : made) {
    first.insert(b);
    FrameCache::deallocate(b);
  }
  const std::size_t reserved = FrameCache::reserved_bytes();
  made.clear();
  lanes_of_page.clear();
  make_interleaved();  // again, from the blocks just freed: each lane's own
  for (const auto& [page, lanes] : lanes_of_page)
    EXPECT_FALSE(lanes.contains(1) && lanes.contains(2)) << "a page shared by lanes";
  std::set<void*> second;
  for (auto [b, lane] : made) second.insert(b);
  EXPECT_EQ(second, first);
  EXPECT_EQ(FrameCache::reserved_bytes(), reserved);
  for (auto [b, lane] : made) FrameCache::deallocate(b);
}

TEST(FrameCache, ALaneScopeEndsWhereItWasMadeAndLanesWrapAroundTheirCount) {
  {
    const FrameCache::LaneScope outer(3);
    { const FrameCache::LaneScope inner(5); }
    void* in_three = FrameCache::allocate(64);
    const FrameCache::LaneScope again(3);
    void* also_three = FrameCache::allocate(64);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(in_three) / 4096, reinterpret_cast<std::uintptr_t>(also_three) / 4096)
        << "the inner scope gave lane 3 back: both from its first slab";
    FrameCache::deallocate(in_three);
    FrameCache::deallocate(also_three);
  }
  EXPECT_EQ(FrameCache::lane_of_core(0), 1u);
  EXPECT_EQ(FrameCache::lane_of_core(FrameCache::kLanes - 2), FrameCache::kLanes - 1);
  EXPECT_EQ(FrameCache::lane_of_core(FrameCache::kLanes - 1), 1u) << "past the last lane, round again; never lane 0";
}

TEST(FrameCache, AThreadThatEndsHandsItsBlocksToTheNext) {
  std::thread([] { churn(40000, 500); }).join();  // takes chunks, then ends
  const std::size_t reserved = FrameCache::reserved_bytes();
  for (int t = 0; t < 4; ++t) std::thread([] { churn(40000, 500); }).join();
  EXPECT_EQ(FrameCache::reserved_bytes(), reserved) << "new threads must start from the blocks of ended ones";
}

// A frame destroyed on another thread than the one that made it (a task made
// by the caller of run and dropped by a worker) joins the list of the thread
// that freed it, which makes its next frames from it.
TEST(FrameCache, BlocksFreedOnAnotherThreadServeThatThread) {
  std::vector<void*> blocks(30000);
  std::thread([&] {
    for (auto& b : blocks) b = FrameCache::allocate(300);
  }).join();
  for (void* b : blocks) FrameCache::deallocate(b);
  const std::size_t reserved = FrameCache::reserved_bytes();
  for (int round = 0; round < 3; ++round) {
    for (auto& b : blocks) {
      b = FrameCache::allocate(300);
      std::memset(b, round, 300);
    }
    for (void* b : blocks) FrameCache::deallocate(b);
  }
  EXPECT_EQ(FrameCache::reserved_bytes(), reserved);
}

TEST(FrameCache, EverySizeIsUsableAndLargeFramesComeFromTheHeap) {
  std::vector<std::pair<std::byte*, std::size_t>> live;
  for (std::size_t size = 1; size <= 8192; size = size * 3 / 2 + 1) {
    auto* p = static_cast<std::byte*>(FrameCache::allocate(size));
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u) << size;
    std::memset(p, static_cast<int>(size & 0xff), size);
    live.emplace_back(p, size);
  }
  for (auto [p, size] : live) {
    for (std::size_t i = 0; i < size; ++i)
      ASSERT_EQ(p[i], static_cast<std::byte>(size & 0xff)) << "overlap at " << size;
    FrameCache::deallocate(p);
  }
}

TEST(FrameCache, LineAlignedObjectsStartOnACacheLine) {
  std::vector<void*> objects;
  for (std::size_t size : {1, 64, 100, 192, 2000, 5000}) {
    void* p = FrameCache::allocate_line_aligned(size);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << size;
    std::memset(p, 1, size);
    objects.push_back(p);
  }
  for (void* p : objects) FrameCache::deallocate_line_aligned(p);
}

#if defined(__SANITIZE_ADDRESS__)
TEST(FrameCache, AFreedFrameIsPoisonedUnderAddressSanitizer) {
  void* p = FrameCache::allocate(100);
  EXPECT_FALSE(__asan_address_is_poisoned(p));
  FrameCache::deallocate(p);
  EXPECT_TRUE(__asan_address_is_poisoned(p)) << "a use of a destroyed frame must be reported";
  void* q = FrameCache::allocate(100);
  EXPECT_EQ(q, p) << "the last freed block of a class is the next one given";
  EXPECT_FALSE(__asan_address_is_poisoned(q));
  FrameCache::deallocate(q);
}
#endif

}  // namespace frame_cache

}  // namespace
