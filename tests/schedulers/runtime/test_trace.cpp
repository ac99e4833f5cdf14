// Traces: exchanges recorded into a TraceLog, the JSON parsed back, and its
// events held against the exchange that ran: every message of the matrix sent
// and received once with its bytes, a named track for every process, spans
// that nest on every track, phases for a static schedule, one busy-lock
// attempt per DRS_N inquiry. Also: a full buffer drops and counts, a failed job
// still ends its spans, trace_file writes one job's file and refuses a bad
// path before the job starts.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <switchyard/trace.hpp>
#include <tuple>
#include <vector>

#include "exchange_cases.hpp"
#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;
using nlohmann::json;

json parse(const TraceLog& log) {
  std::ostringstream out;
  log.write(out);
  return json::parse(out.str());
}

// Runs plan once in a job recording into `log`, every byte checked; returns
// the DRS_N inquiries of all processes.
std::uint64_t run_traced(const CommMatrix& m, const ExchangePlan& plan, TraceLog& log) {
  RunOptions o = sytest::run_options();
  o.trace = &log;
  std::vector<std::uint64_t> inquiries(m.size(), 0);
  sytest::runtime().run(
      m.size(),
      [&](Process& p) -> Task<void> {
        ExchangeBuffers b(m, p.rank(), 7);
        const std::vector<std::span<const std::byte>> sends = b.send_buffers();
        const std::vector<std::span<std::byte>> recvs = b.recv_buffers();
        const ExchangeRunStats stats = co_await plan.run(p, sends, recvs);
        inquiries[p.rank()] = stats.busy_lock_inquiries;
        if (auto bad = b.verify()) throw PayloadError(plan.options().scheduler, *bad);
      },
      o);
  std::uint64_t total = 0;
  for (std::uint64_t q : inquiries) total += q;
  return total;
}

std::vector<json> events_named(const json& trace, const std::string& name) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e.value("name", "") == name && e["ph"] == "X") out.push_back(e);
  }
  return out;
}

// Messages (and copies, which have no tag) of the exchange itself: collectives
// use the reserved tags (2^31 and up).
bool user_message(const json& e) {
  return !e["args"].contains("tag") || e["args"]["tag"].get<std::uint64_t>() < (std::uint64_t{1} << 31);
}

// (src, dst) -> {messages, bytes} of the events named `name` (send or receive).
std::map<std::pair<Rank, Rank>, std::pair<std::uint64_t, std::uint64_t>> pairs_of(const json& trace,
                                                                                  const std::string& name) {
  std::map<std::pair<Rank, Rank>, std::pair<std::uint64_t, std::uint64_t>> out;
  for (const json& e : events_named(trace, name)) {
    if (!user_message(e)) continue;
    auto& [count, bytes] = out[{e["args"]["src"].get<Rank>(), e["args"]["dst"].get<Rank>()}];
    ++count;
    bytes += e["args"]["bytes"].get<std::uint64_t>();
  }
  return out;
}

// On every track, spans either nest or are disjoint: what Perfetto needs to draw them.
void expect_nested(const json& trace) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::pair<std::int64_t, std::int64_t>>> tracks;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const auto ns = [](const json& v) { return static_cast<std::int64_t>(std::llround(v.get<double>() * 1000)); };
    const std::int64_t begin = ns(e["ts"]);
    tracks[{e["pid"], e["tid"]}].emplace_back(begin, begin + ns(e["dur"]));
  }
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;  // outer first
    });
    std::vector<std::int64_t> open;  // ends of the enclosing spans
    for (const auto& [begin, end] : spans) {
      while (!open.empty() && open.back() <= begin) open.pop_back();
      ASSERT_TRUE(open.empty() || end <= open.back())
          << "track pid " << track.first << " tid " << track.second << ": span [" << begin << ", " << end
          << "] ns overlaps the end of its enclosing span at " << open.back();
      open.push_back(end);
    }
  }
}

class TraceOfExchange : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

// Every message of the matrix, once each way in the message execution (DRS_N
// sends synchronously); once as a copy in the compiled one ("locked copy"
// under DRS_N's busy lock).
TEST_P(TraceOfExchange, MatchesTheMatrix) {
  const auto& [scheduler, messages] = GetParam();
  const Rank n = 12;
  // Sizes from 48 to 1536 bytes: both sides of the eager limit.
  const CommMatrix m = nonuniform_matrix(n, 4, 48, 3);
  ExchangePlanOptions options;
  options.scheduler = scheduler;
  options.execution = messages ? ExchangeExecution::messages : ExchangeExecution::compiled;
  const ExchangePlan plan(m, options);
  TraceLog log;
  const std::uint64_t inquiries = run_traced(m, plan, log);
  EXPECT_EQ(log.dropped(), 0u);
  const json trace = parse(log);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 0);
  EXPECT_EQ(trace["otherData"]["events"].get<std::uint64_t>(), log.events());

  std::map<std::pair<Rank, Rank>, std::pair<std::uint64_t, std::uint64_t>> want;
  for (Rank i = 0; i < n; ++i) {
    for (const MatrixEntry& e : m.row(i)) want[{i, e.peer}] = {1, e.bytes};
  }
  if (messages) {
    EXPECT_EQ(pairs_of(trace, scheduler == "drsn" ? "ssend" : "send"), want);
    EXPECT_EQ(pairs_of(trace, "receive"), want);
    for (const json& e : events_named(trace, "receive")) EXPECT_EQ(e["args"]["rank"], e["args"]["dst"]);
  } else {
    EXPECT_EQ(pairs_of(trace, scheduler == "drsn" ? "locked copy" : "copy"), want);
    EXPECT_TRUE(pairs_of(trace, "send").empty()) << "a compiled run sends no message of the exchange";
  }

  // A named track, and a run span, for every process, on the core it ran on.
  std::set<Rank> named, ran;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      const Rank r = static_cast<Rank>(e["tid"].get<std::uint64_t>() - 1);
      EXPECT_EQ(e["args"]["name"], "rank " + std::to_string(r));
      named.insert(r);
    }
  }
  for (const json& e : events_named(trace, "run")) ran.insert(e["args"]["rank"].get<Rank>());
  EXPECT_EQ(named.size(), n);
  EXPECT_EQ(ran.size(), n);
  expect_nested(trace);

  // Every send has its arrow to its receive (a compiled run has none).
  std::uint64_t starts = 0, finishes = 0;
  for (const json& e : trace["traceEvents"]) {
    starts += e["ph"] == "s";
    finishes += e["ph"] == "f";
  }
  EXPECT_EQ(starts, events_named(trace, "receive").size());
  EXPECT_EQ(finishes, starts);

  if (plan.is_static()) {
    std::set<std::uint64_t> phases;
    for (const json& e : events_named(trace, "phase")) phases.insert(e["args"]["phase"].get<std::uint64_t>());
    EXPECT_EQ(phases.size(), plan.phases());
    EXPECT_EQ(*phases.rbegin() + 1, plan.phases());
  }
  if (scheduler == "drsn") {
    // One attempt per inquiry, one success per message.
    const auto attempts = events_named(trace, "busy_lock");
    EXPECT_EQ(attempts.size(), inquiries);
    const auto acquired =
        std::count_if(attempts.begin(), attempts.end(), [](const json& e) { return e["args"]["acquired"] == 1; });
    EXPECT_EQ(static_cast<std::uint64_t>(acquired), m.messages());
    EXPECT_EQ(events_named(trace, messages ? "locked send" : "locked copy").size(), m.messages());
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, TraceOfExchange,
                         ::testing::Combine(::testing::Values("cgm", "optimal", "drsn", "ac"), ::testing::Bool()),
                         [](const auto& info) {
                           return sytest::identifier(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_messages" : "_copy");
                         });

TEST(Trace, FullBufferDropsAndCounts) {
  const CommMatrix m = fig7_matrix(8, 3, 100, 1);
  const ExchangePlan plan(m, ExchangePlanOptions{.scheduler = "cgm", .execution = ExchangeExecution::messages});
  TraceLog log(16);
  run_traced(m, plan, log);
  const json trace = parse(log);
  const std::uint64_t cores = sytest::runtime().cores().size();
  EXPECT_EQ(log.events(), 16 * cores);
  EXPECT_GT(log.dropped(), 0u);
  EXPECT_EQ(trace["otherData"]["dropped_events"].get<std::uint64_t>(), log.dropped());
  for (const json& e : trace["traceEvents"]) EXPECT_NE(e["ph"], "s") << "no arrows once events are missing";
}

TEST(Trace, SeveralJobsInOneLog) {
  TraceLog log;
  Runtime rt(RuntimeOptions{.trace = &log});
  for (int job = 0; job < 2; ++job) {
    rt.run(4, [](Process& p) -> Task<void> { co_await p.barrier(); });
  }
  const json trace = parse(log);
  EXPECT_EQ(trace["otherData"]["jobs"], 2);
  EXPECT_EQ(events_named(trace, "run").size(), 8u);
  EXPECT_EQ(events_named(trace, "barrier").size(), 8u);
}

// Rank 1 waits for a message that never comes: rank 0 fails. The file is
// still written, its wait ended when the job did.
TEST(Trace, FailedJobStillWritesItsFile) {
  const auto path = std::filesystem::temp_directory_path() / ("switchyard_trace_" + std::to_string(getpid()) + ".json");
  RunOptions o = sytest::run_options();
  o.trace_file = path.string();
  EXPECT_THROW(sytest::runtime().run(
                   2,
                   [](Process& p) -> Task<void> {
                     const std::byte hello[1]{};
                     if (p.rank() == 0) {
                       co_await p.recv(1);  // rank 1 is waiting by then: it parked in the round that sent this
                       throw std::runtime_error("rank 0 gives up");
                     }
                     co_await p.send(0, hello);
                     co_await p.recv(0);
                   },
                   o),
               std::runtime_error);
  std::ifstream in(path);
  const json trace = json::parse(in);
  std::filesystem::remove(path);
  bool waited = false;
  for (const json& e : events_named(trace, "wait")) {
    if (e["args"]["rank"] == 1 && e["args"]["peer"] == 0) {
      waited = true;
      EXPECT_EQ(e["args"]["what"], "a message (recv) from");
      EXPECT_GT(e["dur"].get<double>(), 0);
    }
  }
  EXPECT_TRUE(waited) << "rank 1's wait for rank 0 is in the trace";
}

TEST(Trace, BadTraceFileRefusedBeforeTheJob) {
  RunOptions o = sytest::run_options();
  o.trace_file = "/nonexistent-directory/trace.json";
  bool ran = false;
  EXPECT_THROW(sytest::runtime().run(
                   1,
                   [&](Process&) -> Task<void> {
                     ran = true;
                     co_return;
                   },
                   o),
               InvalidArgument);
  EXPECT_FALSE(ran);
  TraceLog log;
  o.trace = &log;
  o.trace_file = "x.json";
  EXPECT_THROW(sytest::runtime().run(
                   1, [](Process&) -> Task<void> { co_return; }, o),
               InvalidArgument);
  EXPECT_THROW(TraceLog(0), InvalidArgument);
}

}  // namespace
