#include "switchyard/schedulers/exchange.hpp"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "switchyard/balanced_order.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/median.hpp"
#include "switchyard/node_reduction.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/schedulers/generate_recv.hpp"
#include "switchyard/schedulers/payload.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"
#include "switchyard/span_timer.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::schedulers {

double exchange_work(const std::vector<std::string>& schedulers, const MatrixShape& shape, std::uint32_t repeat) {
  const auto n = static_cast<double>(shape.processes), messages = static_cast<double>(shape.messages);
  const double graph = n + messages, k = repeat;
  // By the registry's scheme, so that a scheduler added to it is charged without a change here.
  auto one = [&](const std::string& name) -> double {
    const SchedulerDescriptor* d = find_scheduler(name);
    if (d == nullptr) throw InvalidArgument("switchyard: exchange_work: unknown scheduler '" + name + "'");
    switch (d->online) {
      case OnlineScheme::ac:
        return k * graph;
      case OnlineScheme::drsn:
        // A process retries its pending destinations until each is free, Δ tries each at worst.
        return k * graph * static_cast<double>(std::max<std::uint64_t>(shape.max_degree, 1));
      case OnlineScheme::none:
        break;
    }
    return k * (d->work(shape) + graph);
  };
  // Generate_Recv, both ways: a sort of n ranks per core and the messages.
  double work = 2 * k * (n * std::log2(n + 2) + messages);
  for (const std::string& name : schedulers.empty() ? default_exchange_schedulers() : schedulers) {
    if (name != kAutoScheduler) {
      work += one(name);
      continue;
    }
    // auto makes every candidate's schedule once to charge it, then runs the cheapest.
    double most = 0;
    for (const std::string& c : auto_scheduler_candidates()) {
      const double run = one(c);
      work += run / k;
      most = std::max(most, run);
    }
    work += most;
  }
  return work;
}

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64_finalize(seed + (stream + 1) * kSplitMix64Gamma);
}

// One process's buffers, and the spans of them that ExchangePlan::run takes.
struct ProcessBuffers {
  ProcessBuffers(Rank me, std::span<const MatrixEntry> row, std::span<const MatrixEntry> column, std::uint64_t seed)
      : data(me, row, column, seed), send(data.send_buffers()), recv(data.recv_buffers()) {}
  ExchangeBuffers data;
  std::vector<std::span<const std::byte>> send;
  std::vector<std::span<std::byte>> recv;
};
using BufferSet = std::vector<std::unique_ptr<ProcessBuffers>>;

// Each process builds its own buffers on its core: the fill runs on every core
// at once, and the pages are first touched where they are used.
BufferSet make_buffers(Runtime& rt, const CommMatrix& m, const std::vector<std::vector<MatrixEntry>>& columns,
                       std::uint64_t seed, const RunOptions& options) {
  BufferSet buffers(m.size());
  rt.run(
      m.size(),
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        buffers[me] = std::make_unique<ProcessBuffers>(me, m.row(me), columns[me], seed);
        co_return;
      },
      options);
  return buffers;
}

// After the clock and the barrier behind it (checking takes time on this
// core): every byte this process received is checked.
void verify_repetition(const ExchangeBuffers& b, const std::string& scheduler, std::uint32_t rep) {
  if (auto bad = b.verify()) {
    throw PayloadError("exchange: scheduler '" + scheduler + "', repetition " + std::to_string(rep + 1), *bad);
  }
}

bool same_entries(std::span<const MatrixEntry> a, std::span<const MatrixEntry> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const MatrixEntry& x, const MatrixEntry& y) { return x.peer == y.peer && x.bytes == y.bytes; });
}

class Driver {
 public:
  Driver(Runtime& rt, const CommMatrix& m, const ExchangeOptions& o)
      : rt_(rt), m_(m), o_(o), n_(m.size()), columns_(n_) {
    for (Rank src = 0; src < n_; ++src) {
      for (const MatrixEntry& e : m.row(src)) columns_[e.peer].push_back({src, e.bytes});
    }
  }

  ExchangeReport run() {
    ExchangeReport report;
    report.processes = n_;
    report.messages = m_.messages();
    report.total_bytes = m_.total_bytes();
    buffers_ = make_buffers(rt_, m_, columns_, o_.seed, o_.run_options);
    const auto names = o_.schedulers.empty() ? default_exchange_schedulers() : o_.schedulers;
    if (o_.interleave) {
      report.results = run_interleaved(names);
    } else {
      for (const std::string& name : names) report.results.push_back(run_scheduler(name));
    }
    if (o_.time_generate_recv) report.generate_recv = time_generate_recv();
    return report;
  }

 private:
  ExchangePlanOptions plan_options(const std::string& name) const {
    ExchangePlanOptions po;
    po.scheduler = name;
    // The seed itself, as `switchyard schedule --seed` and ExchangePlanOptions
    // take it: the same seed gives the same schedule everywhere (the payloads
    // draw from it too, but through ExchangeBuffers' own mixing).
    po.seed = o_.seed;
    po.max_phases = o_.max_phases;
    po.machine = o_.machine ? &*o_.machine : nullptr;
    po.ac = o_.ac;
    po.drsn_retry_yields = o_.drsn_retry_yields;
    po.execution = o_.execution;
    po.copy_side = o_.copy_side;
    po.strict = o_.strict;
    return po;
  }

  // The plan from the whole matrix, for every scheduler but drsn, whose
  // processes make theirs in each repetition. Static: made K times, the
  // papers' "comp" being one processor's scheduling time: oneTBB (CGM's CCOM
  // build) gets this thread alone.
  std::optional<ExchangePlan> global_plan(const ExchangePlanOptions& po, SchedulerResult& r) const {
    std::optional<ExchangePlan> plan;
    const SchedulerDescriptor* d = find_scheduler(po.scheduler.view());  // null: auto
    if (d && d->traits.plan_per_run) return plan;
    if (d && d->kind == SchedulerKind::online) {
      plan.emplace(m_, po);
      r.schedule_ms = summarize(std::vector<double>(o_.repeat, 0.0));
      return plan;
    }
    if (po.scheduler == kAutoScheduler) {  // chosen once; its comp is the choice and the chosen schedule
      plan.emplace(m_, po);
      r.chosen = plan->options().scheduler;
      r.is_static = plan->is_static();
      r.schedule_ms = summarize(std::vector<double>(o_.repeat, plan->schedule_ms()));
      if (r.is_static) r.phases = plan->phases();
      return plan;
    }
    tbb::task_arena one_thread(1);
    one_thread.initialize();  // not on the clock
    std::vector<double> ms;
    for (std::uint32_t k = 0; k < o_.repeat; ++k) {
      one_thread.execute([&] { plan.emplace(m_, po); });
      ms.push_back(plan->schedule_ms());
    }
    r.is_static = true;
    r.schedule_ms = summarize(std::move(ms));
    r.phases = plan->phases();
    return plan;
  }

  // One scheduler's plan, clocks and result while its job (or the interleaved
  // job) runs.
  struct Slot {
    SchedulerResult r;
    ExchangePlanOptions po;
    std::optional<ExchangePlan> global;
    SpanTimer plan_clocks, clocks;
    // Per process, its repetitions' busy-lock inquiries, one process's after
    // another's: each process writes lines of its own (repetition-major, the
    // processes of both cores wrote one line, inside the timed span).
    std::vector<std::uint64_t> inquiries;
    // Per process, the global plan bound to its buffers (the same in every
    // repetition), as a program that runs a plan many times binds it.
    std::vector<std::optional<BoundExchange>> bound;
    Slot(const Runtime& rt, Rank n, std::uint32_t repeat)
        : plan_clocks(rt, repeat), clocks(rt, repeat), inquiries(std::size_t{n} * repeat, 0), bound(n) {}
  };

  // The plan (global_plan) of `name`; drsn's processes make theirs with
  // `generate`, which must be installed in the job's options.
  std::unique_ptr<Slot> prepare(const std::string& name, GenerateRecvByActiveMessages& generate) const {
    auto slot = std::make_unique<Slot>(rt_, n_, o_.repeat);
    slot->r.scheduler = name;
    slot->po = plan_options(name);
    slot->global = global_plan(slot->po, slot->r);
    if (!slot->global) slot->po.generate_recv = &generate;
    return slot;
  }

  // Repetition `rep` of one scheduler on process p: for drsn, the plan by
  // create() (Generate_Recv by active messages, timed as schedule_ms) and a
  // barrier; then the run (comm_ms).
  Task<void> repetition(Process& p, Slot& s, std::uint32_t rep) const {
    const Rank me = p.rank();
    ProcessBuffers& b = *buffers_[me];
    // Fresh poison, then everyone lines up. The barriers around the clock are
    // awaited here, not in calls of their own: a coroutine frame made and
    // ended per process would count in the timed span of every process but
    // the first to start and the last to end.
    b.data.poison();
    co_await p.barrier();
    std::optional<ExchangePlan> mine;
    if (!s.global) {
      ExchangePlanOptions drsn = s.po;
      drsn.seed = derive_seed(o_.seed, 2 + rep);
      s.plan_clocks.start(rep, p);
      mine = co_await ExchangePlan::create(p, b.data.row(), std::move(drsn));
      s.plan_clocks.end(rep, p);
      co_await p.barrier();
    }
    std::optional<BoundExchange>& bound = s.bound[me];
    if (s.global && !bound) bound = s.global->bind(p, b.send, b.recv);
    s.clocks.start(rep, p);
    ExchangeRunStats stats;
    if (bound) {  // not one co_await of a conditional: GCC 12 destroys such a temporary twice
      stats = co_await bound->run();
    } else {
      stats = co_await mine->run(p, b.send, b.recv);
    }
    s.clocks.end(rep, p);
    s.inquiries[std::size_t{me} * o_.repeat + rep] = stats.busy_lock_inquiries;
    co_await p.barrier();
    verify_repetition(b.data, s.r.scheduler, rep);
  }

  // The row's figures, combined over the nodes in one reduction.
  SchedulerResult finish(Slot& s, const JobStats& job) const {
    NodeReduction over;
    const auto comm = over.add(s.clocks.node_spans(), NodeReduction::kMax);
    const auto plan =
        over.add(s.global ? std::vector<std::int64_t>{} : s.plan_clocks.node_spans(), NodeReduction::kMax);
    const auto inquiries =
        over.add(s.global ? std::vector<std::int64_t>{} : inquiry_totals(s.inquiries), NodeReduction::kSum);
    // The counts of every node's workers.
    const std::int64_t counts[] = {static_cast<std::int64_t>(job.resumes), static_cast<std::int64_t>(job.slots),
                                   static_cast<std::int64_t>(job.ring_full),
                                   static_cast<std::int64_t>(job.kernel_calls)};
    const auto jobs = over.add(counts, NodeReduction::kSum);
    over.combine(rt_);
    s.r.comm_ms = summarize(SpanTimer::to_milliseconds(over.result(comm)));
    if (!s.global) {
      s.r.schedule_ms = summarize(SpanTimer::to_milliseconds(over.result(plan)));
      record_inquiries(s.r, over.result(inquiries));
    }
    const auto all = over.result(jobs);
    s.r.job = {static_cast<std::uint64_t>(all[0]), static_cast<std::uint64_t>(all[1]),
               static_cast<std::uint64_t>(all[2]), static_cast<std::uint64_t>(all[3])};
    s.r.verified = true;
    return std::move(s.r);
  }

  SchedulerResult run_scheduler(const std::string& name) {
    GenerateRecvByActiveMessages generate(n_);
    const std::unique_ptr<Slot> slot = prepare(name, generate);
    RunOptions options = o_.run_options;
    if (!slot->global) generate.install(options);
    const JobStats job = rt_.run(
        n_,
        [&](Process& p) -> Task<void> {
          for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) co_await repetition(p, *slot, rep);
        },
        options);
    return finish(*slot, job);
  }

  // ExchangeOptions::interleave: every scheduler's plan made first, then one
  // job in which every repetition runs every scheduler once, in the order of
  // balanced_order(), so that the machine's other tenants hit them alike and
  // none always runs after the same other.
  std::vector<SchedulerResult> run_interleaved(const std::vector<std::string>& names) {
    GenerateRecvByActiveMessages generate(n_);
    std::vector<std::unique_ptr<Slot>> slots;
    bool any_drsn = false;
    for (const std::string& name : names) {
      slots.push_back(prepare(name, generate));
      any_drsn = any_drsn || !slots.back()->global;
    }
    RunOptions options = o_.run_options;
    if (any_drsn) generate.install(options);
    const JobStats job = rt_.run(
        n_,
        [&](Process& p) -> Task<void> {
          for (std::uint32_t rep = 0; rep < o_.repeat; ++rep)
            for (std::size_t i = 0; i < slots.size(); ++i)
              co_await repetition(p, *slots[balanced_order(slots.size(), rep, i)], rep);
        },
        options);
    std::vector<SchedulerResult> out;
    for (auto& slot : slots) out.push_back(finish(*slot, job));
    return out;
  }

  // Per repetition, the busy-lock attempts of this node's processes (their
  // sums over the nodes: every process's).
  std::vector<std::int64_t> inquiry_totals(const std::vector<std::uint64_t>& per_process) const {
    std::vector<std::int64_t> totals(o_.repeat, 0);
    for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) {
      for (Rank i = 0; i < n_; ++i)
        totals[rep] += static_cast<std::int64_t>(per_process[std::size_t{i} * o_.repeat + rep]);
    }
    return totals;
  }
  // Per repetition, the busy-lock attempts of all processes; their median.
  void record_inquiries(SchedulerResult& r, std::span<const std::int64_t> totals) const {
    for (const std::int64_t total : totals) r.inquiry_samples.push_back(static_cast<std::uint64_t>(total));
    std::vector<std::uint64_t> sorted = r.inquiry_samples;
    std::sort(sorted.begin(), sorted.end());
    r.inquiries = sorted[sorted.size() / 2];
  }

  // Both Generate_Recv methods, one after the other in each repetition, each
  // checked against the matrix's column.
  GenerateRecvTimes time_generate_recv() {
    GenerateRecvByActiveMessages generate(n_);
    RunOptions options = o_.run_options;
    generate.install(options);
    SpanTimer concat(rt_, o_.repeat), am(rt_, o_.repeat);
    rt_.run(
        n_,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) {
            co_await p.barrier();
            concat.start(rep, p);
            const auto by_concat = co_await generate_recv_concat(p, m_.row(me));
            concat.end(rep, p);
            co_await p.barrier();
            am.start(rep, p);
            const auto by_am = co_await generate.run(p, m_.row(me));
            am.end(rep, p);
            for (const auto* got : {&by_concat, &by_am}) {
              if (!same_entries(*got, columns_[me])) {
                throw Error("exchange: Generate_Recv (" +
                            std::string(got == &by_am ? "active messages" : "concatenate") + ") on rank " +
                            std::to_string(me) + ", repetition " + std::to_string(rep + 1) +
                            ": the receiving vector differs from the matrix's column");
              }
            }
          }
        },
        options);
    NodeReduction over;
    const auto by_concat = over.add(concat.node_spans(), NodeReduction::kMax);
    const auto by_am = over.add(am.node_spans(), NodeReduction::kMax);
    over.combine(rt_);
    return GenerateRecvTimes{summarize(SpanTimer::to_milliseconds(over.result(by_concat))),
                             summarize(SpanTimer::to_milliseconds(over.result(by_am)))};
  }

  Runtime& rt_;
  const CommMatrix& m_;
  const ExchangeOptions& o_;
  Rank n_;
  std::vector<std::vector<MatrixEntry>> columns_;
  BufferSet buffers_;
};

}  // namespace

ExchangeReport run_exchange(Runtime& rt, const CommMatrix& m, const ExchangeOptions& options) {
  if (options.repeat == 0) throw InvalidArgument("switchyard: run_exchange: repeat must be at least 1");
  if (m.size() == 0) throw InvalidArgument("switchyard: run_exchange: the matrix has no processes");
  for (const auto& name : options.schedulers) {
    if (!is_exchange_scheduler(name)) {
      std::string known;
      for (const auto& k : default_exchange_schedulers()) known += (known.empty() ? "" : ", ") + k;
      known += std::string(", ") + kAutoScheduler;
      throw InvalidArgument("switchyard: run_exchange: unknown scheduler '" + name + "' (known: " + known + ")");
    }
  }
  return Driver(rt, m, options).run();
}

TimeStats summarize(std::vector<double> samples) {
  TimeStats t;
  t.samples = samples;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  t.min = samples.front();
  t.max = samples.back();
  double sum = 0;
  for (const double v : samples) sum += v;
  t.mean = sum / static_cast<double>(samples.size());
  const auto nearest_rank = [&](std::size_t percent) {  // rank ceil(percent * n / 100), at least 1
    return samples[std::max<std::size_t>((percent * samples.size() + 99) / 100, 1) - 1];
  };
  t.p90 = nearest_rank(90);
  t.p99 = nearest_rank(99);
  t.median = median(std::move(samples));
  return t;
}

}  // namespace switchyard::schedulers
