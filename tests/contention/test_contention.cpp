// Node contention (switchyard::contention): hardware counters with a PMU and
// without one, the cores' distance classes, and the Table 2 experiment in
// every execution, with and without the busy lock, every byte verified.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <span>
#include <switchyard/contention/core_distance.hpp>
#include <switchyard/contention/hardware_counters.hpp>
#include <switchyard/contention/node_contention.hpp>
#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <vector>

namespace {

namespace con = switchyard::contention;
namespace sys = switchyard::schedulers;
using switchyard::InvalidArgument;

// A machine without a PMU, whatever this one has: every event fails as the
// kernel fails a hardware event where there is none.
int no_pmu(const con::CounterEvent&, int) { return -ENOENT; }

// Keeps the thread busy in user space until it has run for `ms` milliseconds
// of its own CPU time (on a loaded machine, wall time would include the
// moments it waited for its core).
void spin(int ms) {
  const auto cpu_ns = [] {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
  };
  const std::int64_t until = cpu_ns() + std::int64_t{ms} * 1'000'000;
  volatile std::uint64_t x = 0;
  // The clock is a system call: look at it seldom, so that the time is user time.
  while (cpu_ns() < until) {
    for (int i = 0; i < 100'000; ++i) x = x + 1;
  }
}

// Counting present: software events open wherever perf_event_open works, so
// the whole path (open, group read, deltas) runs here without a PMU.
TEST(HardwareCounters, SoftwareEventsCountThisThreadsWork) {
  con::CounterGroup group(con::software_events());
  if (!group.available()) GTEST_SKIP() << "perf_event_open is not allowed here: " << con::describe(group);
  ASSERT_EQ(group.counting().size(), 2u);
  EXPECT_EQ(group.counting()[0].name, "task-clock");
  EXPECT_TRUE(group.absent().empty());
  std::uint64_t before[2], after[2];
  ASSERT_TRUE(group.read(before));
  spin(20);
  // 256 fresh pages, each touched once: a fault each.
  const std::size_t bytes = 256 * 4096;
  void* pages = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  for (std::size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(pages)[i] = 1;
  ::munmap(pages, bytes);
  ASSERT_TRUE(group.read(after));
  EXPECT_GE(after[0] - before[0], 15'000'000u) << "task-clock (ns) over 20 ms of this thread's CPU time";
  EXPECT_GE(after[1] - before[1], 128u) << "page faults over 256 fresh pages";
  std::uint64_t too_few[1];
  EXPECT_FALSE(group.read(too_few)) << "a buffer smaller than the group";
  EXPECT_NE(con::describe(group).find("task-clock"), std::string::npos);
}

// Counting absent (simulated): the group says why, reads nothing, and the
// line a report prints says there is nothing to count here.
TEST(HardwareCounters, NoPmuSaysSoInOneLine) {
  con::CounterGroup group(con::hardware_events(), no_pmu);
  EXPECT_FALSE(group.available());
  EXPECT_TRUE(group.counting().empty());
  ASSERT_EQ(group.absent().size(), con::hardware_events().size());
  EXPECT_EQ(group.absent()[0], "cycles: No such file or directory");
  std::uint64_t values[con::CounterGroup::kMaxEvents];
  EXPECT_FALSE(group.read(values));
  const std::string line = con::describe(group);
  EXPECT_NE(line.find("none here"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

// This machine's own PMU, whichever path it takes: counting cycles where
// there is one, saying why not where there is none.
TEST(HardwareCounters, ThisMachinesPmuCountsOrSaysWhyNot) {
  con::CounterGroup group(con::hardware_events());
  if (!group.available()) {
    EXPECT_NE(con::describe(group).find("none here (no PMU"), std::string::npos) << con::describe(group);
    return;
  }
  std::uint64_t before[con::CounterGroup::kMaxEvents], after[con::CounterGroup::kMaxEvents];
  ASSERT_TRUE(group.read(before));
  spin(5);
  ASSERT_TRUE(group.read(after));
  EXPECT_EQ(group.counting()[0].name, "cycles");
  EXPECT_GT(after[0], before[0]) << "cycles while spinning";
}

// An event the PMU lacks beside ones it has: the others count, it is named.
TEST(HardwareCounters, AMissingMemberIsNamedAndTheRestCount) {
  std::vector<con::CounterEvent> events = con::software_events();
  events.push_back({"cache-to-cache", 4 /* PERF_TYPE_RAW */, 0x04d2, "test"});
  con::CounterGroup group(events, [](const con::CounterEvent& e, int group_fd) {
    return e.name == "cache-to-cache" ? -EOPNOTSUPP : con::open_event(e, group_fd);
  });
  if (!group.available()) GTEST_SKIP() << "perf_event_open is not allowed here";
  EXPECT_EQ(group.counting().size(), 2u);
  ASSERT_EQ(group.absent().size(), 1u);
  EXPECT_EQ(group.absent()[0].rfind("cache-to-cache: ", 0), 0u) << group.absent()[0];
  EXPECT_NE(con::describe(group).find("not here: cache-to-cache"), std::string::npos);
}

// Which group each event joins: the hardware events the first hardware
// one's, each software event a group of its own (a kernel may count nothing
// in a software event led by another software PMU's, as task-clock leading
// page-faults did on this project's VM, now and then, with no error). The opener
// records the group it is asked for and hands out real descriptors
// (/dev/null's), which the group closes.
TEST(HardwareCounters, HardwareEventsShareAGroupAndSoftwareEventsLeadTheirOwn) {
  const std::vector<con::CounterEvent> events = {con::software_events()[0],
                                                 {"cycles", 0 /* PERF_TYPE_HARDWARE */, 0, "test"},
                                                 con::software_events()[1],
                                                 {"instructions", 0, 1, "test"},
                                                 {"cache-misses", 0, 3, "test"}};
  std::vector<int> asked, given;
  {
    con::CounterGroup group(events, [&](const con::CounterEvent&, int group_fd) {
      asked.push_back(group_fd);
      given.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      return given.back();
    });
    ASSERT_EQ(group.counting().size(), events.size());
  }
  ASSERT_EQ(given.size(), events.size());
  EXPECT_EQ(asked, (std::vector<int>{-1, -1, -1, given[1], given[1]}));
}

TEST(HardwareCounters, TooManyEventsAreRefused) {
  const std::vector<con::CounterEvent> nine(con::CounterGroup::kMaxEvents + 1, con::software_events()[0]);
  EXPECT_THROW(con::CounterGroup(nine, no_pmu), InvalidArgument);
}

TEST(HardwareCounters, CacheToCacheEventsByVendor) {
  const auto intel = con::cache_to_cache_event("GenuineIntel", 6);
  ASSERT_EQ(intel.size(), 1u);
  EXPECT_EQ(intel[0].config, 0x04d2u);
  const auto zen = con::cache_to_cache_event("AuthenticAMD", 0x19);
  ASSERT_EQ(zen.size(), 1u);
  EXPECT_EQ(zen[0].config, 0x1443u);
  EXPECT_TRUE(con::cache_to_cache_event("AuthenticAMD", 0x17).empty());
  EXPECT_TRUE(con::cache_to_cache_event("", 0).empty());
}

TEST(CoreDistance, EveryOtherCpuInExactlyOneClass) {
  switchyard::Runtime rt;
  const std::vector<int>& cores = rt.cores();
  const auto classes = con::cpus_by_distance(cores.front(), cores);
  std::vector<int> seen;
  for (const auto& c : classes) seen.insert(seen.end(), c.begin(), c.end());
  std::sort(seen.begin(), seen.end());
  std::vector<int> others(cores.begin() + 1, cores.end());
  std::sort(others.begin(), others.end());
  EXPECT_EQ(seen, others);
  EXPECT_THROW(con::cpus_by_distance(99999, cores), InvalidArgument);
  EXPECT_EQ(con::key(con::CoreDistance::same_l3), "l3");
}

// The senders on every core but the receiver's (all on it with one core).
con::ContentionOptions options(const switchyard::Runtime& rt, std::uint32_t senders, std::uint64_t bytes) {
  const std::vector<int>& cores = rt.cores();
  con::ContentionOptions o;
  o.receiver_cpu = cores.front();
  o.sender_cpus = con::spread_senders(senders, cores.size() > 1 ? std::span(cores).subspan(1) : std::span(cores));
  o.bytes = bytes;
  o.repeat = 3;
  return o;
}

void expect_sane(const con::ContentionResult& r, std::uint32_t senders, std::uint32_t repeat) {
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.senders, senders);
  ASSERT_EQ(r.recv_us.samples.size(), repeat);
  for (std::uint32_t k = 0; k < repeat; ++k) {
    EXPECT_GT(r.recv_us.samples[k], 0);
    EXPECT_LE(r.send_min_us.samples[k], r.send_avg_us.samples[k]);
    EXPECT_LE(r.send_avg_us.samples[k], r.send_max_us.samples[k]);
  }
}

// Both executions, with and without the busy lock, push and pull: every byte
// of every run arrives (a wrong one throws PayloadError).
TEST(NodeContention, EveryExecutionWithAndWithoutTheBusyLock) {
  switchyard::Runtime rt;
  for (const auto execution : {sys::ExchangeExecution::compiled, sys::ExchangeExecution::messages}) {
    for (const bool busy : {false, true}) {
      for (const auto side : {switchyard::CopySide::sender, switchyard::CopySide::receiver}) {
        if ((busy || execution == sys::ExchangeExecution::messages) && side == switchyard::CopySide::receiver) continue;
        for (const std::uint32_t d : {1u, 3u, 8u}) {
          for (const std::uint64_t bytes : {256u, 4096u}) {
            SCOPED_TRACE(testing::Message()
                         << "messages " << (execution == sys::ExchangeExecution::messages) << " busy " << busy
                         << " pull " << (side == switchyard::CopySide::receiver) << " d " << d << " bytes " << bytes);
            con::ContentionOptions o = options(rt, d, bytes);
            o.execution = execution;
            o.busy_lock = busy;
            o.copy_side = side;
            const con::ContentionResult r = con::run_node_contention(rt, o);
            expect_sane(r, d, o.repeat);
            ASSERT_EQ(r.inquiries.size(), o.repeat);
            // Each sender takes the receiver's lock at least once per run.
            if (busy) {
              EXPECT_GE(r.inquiries[0], d);
            } else {
              EXPECT_EQ(r.inquiries[0], 0u);
            }
          }
        }
      }
    }
  }
}

// The upper end: 64 senders, compiled with busy locks and on messages.
TEST(NodeContention, SixtyFourSenders) {
  switchyard::Runtime rt;
  for (const auto execution : {sys::ExchangeExecution::compiled, sys::ExchangeExecution::messages}) {
    con::ContentionOptions o = options(rt, 64, 4096);
    o.execution = execution;
    o.busy_lock = true;
    expect_sane(con::run_node_contention(rt, o), 64, o.repeat);
  }
}

// Counting present (software events through the real perf_event_open): a
// window per run on the receiver's core and on the senders' cores.
TEST(NodeContention, CountersPerCoreAndRun) {
  switchyard::Runtime rt;
  if (!con::CounterGroup(con::software_events()).available()) GTEST_SKIP() << "perf_event_open is not allowed here";
  con::ContentionOptions o = options(rt, 4, 64 * 1024);
  o.counters = con::software_events();
  const con::ContentionResult r = con::run_node_contention(rt, o);
  expect_sane(r, 4, o.repeat);
  ASSERT_EQ(r.counter_names, (std::vector<std::string>{"task-clock", "page-faults"}));
  ASSERT_EQ(r.counter_runs.size(), o.repeat);
  const bool senders_apart = rt.cores().size() > 1;
  for (const con::CounterRun& run : r.counter_runs) {
    ASSERT_EQ(run.receiver.size(), 2u);
    EXPECT_GT(run.receiver[0], 0u) << "task-clock of the receiver's core over its window";
    EXPECT_EQ(run.senders.size(), senders_apart ? 2u : 0u);
    if (senders_apart) {
      EXPECT_GT(run.senders[0], 0u);
    }
  }
}

// Counting absent (simulated): the run carries on, times and bytes as ever.
TEST(NodeContention, NoPmuCarriesOn) {
  switchyard::Runtime rt;
  con::ContentionOptions o = options(rt, 4, 256);
  o.counters = con::hardware_events();
  o.open = no_pmu;
  const con::ContentionResult r = con::run_node_contention(rt, o);
  expect_sane(r, 4, o.repeat);
  EXPECT_TRUE(r.counter_names.empty());
  EXPECT_TRUE(r.counter_runs.empty());
  ASSERT_FALSE(r.counters_absent.empty());
  EXPECT_EQ(r.counters_absent[0], "cycles: No such file or directory");
}

TEST(NodeContention, BadArgumentsAreInvalidArguments) {
  switchyard::Runtime rt;
  con::ContentionOptions none = options(rt, 1, 256);
  none.sender_cpus.clear();
  EXPECT_THROW(con::run_node_contention(rt, none), InvalidArgument);
  con::ContentionOptions foreign = options(rt, 2, 256);
  foreign.sender_cpus[1] = 99999;
  EXPECT_THROW(con::run_node_contention(rt, foreign), InvalidArgument);
  con::ContentionOptions receiver = options(rt, 2, 256);
  receiver.receiver_cpu = -1;
  EXPECT_THROW(con::run_node_contention(rt, receiver), InvalidArgument);
  con::ContentionOptions empty = options(rt, 2, 0);
  EXPECT_THROW(con::run_node_contention(rt, empty), InvalidArgument);
  con::ContentionOptions never = options(rt, 2, 256);
  never.repeat = 0;
  EXPECT_THROW(con::run_node_contention(rt, never), InvalidArgument);
  EXPECT_THROW(con::spread_senders(3, {}), InvalidArgument);
}

// The paper's table as transcribed: six rows each, the receiver's time
// growing with d at both sizes (the table's point).
TEST(NodeContention, PaperTable2) {
  for (const std::uint64_t bytes : {256u, 4096u}) {
    const auto rows = con::paper_table2(bytes);
    ASSERT_EQ(rows.size(), 6u);
    EXPECT_EQ(rows.front().senders, 1u);
    EXPECT_EQ(rows.back().senders, 31u);
    for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GT(rows[i].recv, rows[i - 1].recv);
  }
  EXPECT_TRUE(con::paper_table2(1024).empty());
  EXPECT_FALSE(con::paper_table2_row(256, 3));
  EXPECT_DOUBLE_EQ(con::paper_table2_row(4096, 31)->recv, 19.485);
}

}  // namespace
