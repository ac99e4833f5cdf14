#include "switchyard/contention/node_contention.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <string>

#include "switchyard/cache_line.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/payload.hpp"

namespace switchyard::contention {

namespace {

namespace sys = switchyard::schedulers;
using Clock = std::chrono::steady_clock;
using Counts = std::array<std::uint64_t, CounterGroup::kMaxEvents>;

constexpr PaperContentionRow kTable2Bytes256[] = {{1, 0.089, 0.131, 0.050, 0.061},  {2, 0.125, 0.150, 0.070, 0.081},
                                                  {4, 0.205, 0.199, 0.098, 0.116},  {8, 0.375, 0.298, 0.173, 0.210},
                                                  {16, 0.731, 0.575, 0.302, 0.394}, {31, 1.396, 1.279, 0.151, 0.815}};
constexpr PaperContentionRow kTable2Bytes4096[] = {
    {1, 0.516, 0.504, 0.485, 0.488}, {2, 1.083, 1.048, 1.023, 1.038},   {4, 2.189, 2.124, 2.085, 2.097},
    {8, 4.693, 4.844, 4.353, 4.502}, {16, 9.865, 10.065, 9.155, 9.476}, {31, 19.485, 19.544, 2.847, 15.550}};

// One core's part of the counting, touched only by its worker thread while
// the job runs (its processes run on that thread alone), read after it.
struct alignas(kCacheLine) CoreCounting {
  Rank first = kAnySource;  // the core's lowest rank: it opens the group
  std::uint32_t members = 0;
  std::uint32_t started = 0, finished = 0;  // of the run under way
  std::unique_ptr<CounterGroup> group;
  Counts start{};
  std::vector<Counts> runs;  // per timed run: the counts of its window
  bool read_failed = false;
};
static_assert(kOwnsCacheLines<CoreCounting>, "shared across cores: cache lines of its own");

// Each process's stamps in a block of its own, whole cache lines apart: the
// cores stamp at the same instants, and a shared line would move between them
// inside the very interval being measured.
class ProcessClocks {
 public:
  ProcessClocks(Rank processes, std::uint32_t repeat)
      : stride_((repeat + 7) / 8 * 8), ns_(std::size_t{processes} * stride_), inquiries_(ns_.size()) {}
  void record(Rank r, std::uint32_t run, Clock::duration d, std::uint64_t inquiries) noexcept {
    ns_[r * stride_ + run] = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    inquiries_[r * stride_ + run] = inquiries;
  }
  double microseconds(Rank r, std::uint32_t run) const noexcept {
    return static_cast<double>(ns_[r * stride_ + run]) / 1e3;
  }
  std::uint64_t inquiries(Rank r, std::uint32_t run) const noexcept { return inquiries_[r * stride_ + run]; }

 private:
  std::size_t stride_;
  std::vector<std::int64_t> ns_;
  std::vector<std::uint64_t> inquiries_;
};

void check_options(const Runtime& rt, const ContentionOptions& o) {
  if (rt.nodes() > 1)
    throw InvalidArgument("switchyard: node contention is measured on one node, not " + std::to_string(rt.nodes()));
  if (o.sender_cpus.empty()) throw InvalidArgument("switchyard: node contention needs at least one sender");
  if (o.bytes == 0) throw InvalidArgument("switchyard: node contention needs messages of at least one byte");
  if (o.repeat == 0) throw InvalidArgument("switchyard: node contention needs at least one timed run");
  const auto known = [&](int cpu) { return std::find(rt.cores().begin(), rt.cores().end(), cpu) != rt.cores().end(); };
  if (!known(o.receiver_cpu)) {
    throw InvalidArgument("switchyard: the receiver's CPU " + std::to_string(o.receiver_cpu) +
                          " is not one of the runtime's cores");
  }
  for (std::size_t s = 0; s < o.sender_cpus.size(); ++s) {
    if (!known(o.sender_cpus[s])) {
      throw InvalidArgument("switchyard: sender " + std::to_string(s) + "'s CPU " + std::to_string(o.sender_cpus[s]) +
                            " is not one of the runtime's cores");
    }
  }
}

sys::ExchangePlan make_plan(const ContentionOptions& o) {
  const auto d = static_cast<Rank>(o.sender_cpus.size());
  sys::CommMatrix m(d + 1);
  for (Rank s = 0; s < d; ++s) m.set(s, d, o.bytes);
  sys::ExchangePlanOptions po;
  po.scheduler = o.busy_lock ? "drsn" : "ac";
  po.seed = o.seed;
  po.execution = o.execution;
  po.copy_side = o.copy_side;
  return sys::ExchangePlan(m, po);
}

// The receiver's core, and the other cores that hold senders summed, per run.
void collect_counters(const std::vector<CoreCounting>& cores, std::size_t receiver_core, std::uint32_t repeat,
                      ContentionResult& r) {
  const CoreCounting& rc = cores[receiver_core];
  if (!rc.group) return;
  for (const std::string& why : rc.group->absent()) r.counters_absent.push_back(why);
  if (!rc.group->available()) return;
  const std::size_t events = rc.group->counting().size();
  for (const CoreCounting& c : cores) {
    if (c.members && (!c.group || c.group->counting().size() != events || c.read_failed)) {
      r.counters_absent.push_back("a core's counters did not open or read like the receiver's: none reported");
      return;
    }
  }
  for (const CounterEvent& e : rc.group->counting()) r.counter_names.push_back(e.name);
  for (std::uint32_t k = 0; k < repeat; ++k) {
    CounterRun run{{rc.runs[k].begin(), rc.runs[k].begin() + events}, {}};
    for (std::size_t c = 0; c < cores.size(); ++c) {
      if (c == receiver_core || !cores[c].members) continue;
      run.senders.resize(events);
      for (std::size_t e = 0; e < events; ++e) run.senders[e] += cores[c].runs[k][e];
    }
    r.counter_runs.push_back(std::move(run));
  }
}

void summarize_times(const ProcessClocks& clocks, Rank d, std::uint32_t repeat, ContentionResult& r) {
  std::vector<double> recv, most, least, average;
  for (std::uint32_t k = 0; k < repeat; ++k) {
    recv.push_back(clocks.microseconds(d, k));
    double hi = 0, lo = 0, sum = 0;
    std::uint64_t inquiries = 0;
    for (Rank s = 0; s < d; ++s) {
      const double t = clocks.microseconds(s, k);
      hi = s ? std::max(hi, t) : t;
      lo = s ? std::min(lo, t) : t;
      sum += t;
      inquiries += clocks.inquiries(s, k);
    }
    most.push_back(hi);
    least.push_back(lo);
    // The mean lies between the extremes; in floating point, the sum of d
    // equal times over d can come out an ulp above them.
    average.push_back(std::clamp(sum / d, lo, hi));
    r.inquiries.push_back(inquiries);
  }
  r.recv_us = sys::summarize(std::move(recv));
  r.send_max_us = sys::summarize(std::move(most));
  r.send_min_us = sys::summarize(std::move(least));
  r.send_avg_us = sys::summarize(std::move(average));
}

}  // namespace

ContentionResult run_node_contention(Runtime& rt, const ContentionOptions& o) {
  check_options(rt, o);
  const auto d = static_cast<Rank>(o.sender_cpus.size());
  const sys::ExchangePlan plan = make_plan(o);
  std::vector<int> cpu_of_rank = o.sender_cpus;
  cpu_of_rank.push_back(o.receiver_cpu);
  std::vector<std::size_t> core_of(cpu_of_rank.size());
  std::vector<CoreCounting> cores(rt.cores().size());
  for (Rank r = 0; r <= d; ++r) {
    core_of[r] =
        static_cast<std::size_t>(std::find(rt.cores().begin(), rt.cores().end(), cpu_of_rank[r]) - rt.cores().begin());
    CoreCounting& c = cores[core_of[r]];
    if (c.members++ == 0) c.first = r;
    c.runs.resize(o.repeat);
  }
  const bool counting = !o.counters.empty();
  ProcessClocks clocks(d + 1, o.repeat);

  auto body = [&](Process& p) -> Task<void> {
    const Rank me = p.rank();
    CoreCounting& core = cores[core_of[me]];
    if (counting && core.first == me) core.group = std::make_unique<CounterGroup>(o.counters, o.open);
    sys::ExchangeBuffers buffers(me, plan.sends(me), plan.receives(me), o.seed);
    const std::vector<std::span<const std::byte>> send = buffers.send_buffers();
    const std::vector<std::span<std::byte>> recv = buffers.recv_buffers();
    // Run -1 is the untimed one that compiles the plan.
    for (std::int64_t run = -1; run < static_cast<std::int64_t>(o.repeat); ++run) {
      buffers.poison();
      co_await p.barrier();
      const bool timed = run >= 0;
      const bool counted = timed && core.group && core.group->available();
      if (counted && core.started++ == 0) core.read_failed |= !core.group->read(core.start);
      const Clock::time_point start = Clock::now();
      const sys::ExchangeRunStats stats = co_await plan.run(p, send, recv);
      const Clock::time_point end = Clock::now();
      if (counted && ++core.finished == core.members) {
        Counts now{};
        core.read_failed |= !core.group->read(now);
        for (std::size_t e = 0; e < now.size(); ++e)
          core.runs[static_cast<std::size_t>(run)][e] = now[e] - core.start[e];
        core.started = core.finished = 0;
      }
      if (timed) clocks.record(me, static_cast<std::uint32_t>(run), end - start, stats.busy_lock_inquiries);
      if (const auto wrong = buffers.verify()) {
        throw sys::PayloadError("node contention, run " + std::to_string(run + 1) + " of " + std::to_string(o.repeat),
                                *wrong);
      }
    }
  };
  RunOptions run_options;
  run_options.placement = Placement::explicit_map(cpu_of_rank);
  ContentionResult r;
  r.senders = d;
  r.bytes = o.bytes;
  r.job = rt.run(d + 1, body, run_options);
  summarize_times(clocks, d, o.repeat, r);
  if (counting) collect_counters(cores, core_of[d], o.repeat, r);
  r.verified = true;
  return r;
}

std::span<const PaperContentionRow> paper_table2(std::uint64_t bytes) noexcept {
  if (bytes == 256) return kTable2Bytes256;
  if (bytes == 4096) return kTable2Bytes4096;
  return {};
}

std::optional<PaperContentionRow> paper_table2_row(std::uint64_t bytes, std::uint32_t senders) noexcept {
  for (const PaperContentionRow& row : paper_table2(bytes)) {
    if (row.senders == senders) return row;
  }
  return std::nullopt;
}

std::vector<int> spread_senders(std::uint32_t senders, std::span<const int> cpus) {
  if (cpus.empty()) throw InvalidArgument("switchyard: no CPU to place the senders on");
  std::vector<int> out;
  for (std::uint32_t s = 0; s < senders; ++s) out.push_back(cpus[s % cpus.size()]);
  return out;
}

}  // namespace switchyard::contention
