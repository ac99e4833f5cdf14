#include "switchyard/schedulers/exchange.hpp"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "switchyard/errors.hpp"
#include "switchyard/schedulers/executor.hpp"
#include "switchyard/schedulers/generate_recv.hpp"
#include "switchyard/schedulers/payload.hpp"
#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

const std::vector<std::string>& online_scheduler_names() {
  static const std::vector<std::string> names{"ac", "drsn"};
  return names;
}

std::vector<std::string> default_exchange_schedulers() {
  std::vector<std::string> names{"ac"};
  for (const auto& s : static_scheduler_names()) names.push_back(s);
  names.push_back("drsn");
  return names;
}

bool is_exchange_scheduler(const std::string& name) {
  const auto& online = online_scheduler_names();
  const auto& fixed = static_scheduler_names();
  return std::find(online.begin(), online.end(), name) != online.end() ||
         std::find(fixed.begin(), fixed.end(), name) != fixed.end();
}

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + (stream + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}


// Per process and repetition: when it left the barrier and when it was done.
class Clocks {
 public:
  Clocks(Rank n, std::uint32_t repeat) : n_(n), start_(std::size_t{n} * repeat), end_(std::size_t{n} * repeat) {}
  void start(std::uint32_t rep, Rank r) { start_[std::size_t{rep} * n_ + r] = now_ns(); }
  void end(std::uint32_t rep, Rank r) { end_[std::size_t{rep} * n_ + r] = now_ns(); }
  // Per repetition: the latest end minus the earliest start, in ms.
  TimeStats spans(std::uint32_t repeat) const {
    std::vector<double> ms;
    for (std::uint32_t rep = 0; rep < repeat; ++rep) {
      const auto from = start_.begin() + static_cast<std::ptrdiff_t>(std::size_t{rep} * n_);
      const auto to = end_.begin() + static_cast<std::ptrdiff_t>(std::size_t{rep} * n_);
      const std::int64_t first = *std::min_element(from, from + n_);
      const std::int64_t last = *std::max_element(to, to + n_);
      ms.push_back(static_cast<double>(last - first) / 1e6);
    }
    return summarize(std::move(ms));
  }

 private:
  Rank n_;
  std::vector<std::int64_t> start_, end_;
};

using BufferSet = std::vector<std::unique_ptr<ExchangeBuffers>>;

// Each process builds its own buffers on its core: the fill runs on every core
// at once, and the pages are first touched where they are used.
BufferSet make_buffers(Runtime& rt, const CommMatrix& m, const std::vector<std::vector<MatrixEntry>>& columns,
                       std::uint64_t seed, const RunOptions& options) {
  BufferSet buffers(m.size());
  rt.run(
      m.size(),
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        buffers[me] = std::make_unique<ExchangeBuffers>(me, m.row(me), columns[me], seed);
        co_return;
      },
      options);
  return buffers;
}

// Before the clock: fresh poison, then everyone lines up.
Task<void> begin_repetition(Process& p, ExchangeBuffers& b) {
  b.poison();
  co_await p.barrier();
}

// After the clock: everyone has stopped it (checking takes time on this core),
// then every byte this process received is checked.
Task<void> finish_repetition(Process& p, const ExchangeBuffers& b, const std::string& scheduler, std::uint32_t rep) {
  co_await p.barrier();
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
    for (const std::string& name : names) {
      if (name == "ac") {
        report.results.push_back(run_ac());
      } else if (name == "drsn") {
        report.results.push_back(run_drsn());
      } else {
        report.results.push_back(run_static(name));
      }
    }
    if (o_.time_generate_recv) report.generate_recv = time_generate_recv();
    return report;
  }

 private:
  SchedulerResult run_ac() {
    SchedulerResult r;
    r.scheduler = "ac";
    Clocks clocks(n_, o_.repeat);
    r.job = rt_.run(
        n_,
        [&](Process& p) -> Task<void> {
          ExchangeBuffers& b = *buffers_[p.rank()];
          for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) {
            co_await begin_repetition(p, b);
            clocks.start(rep, p.rank());
            co_await execute_ac(p, b, o_.ac);
            clocks.end(rep, p.rank());
            co_await finish_repetition(p, b, r.scheduler, rep);
          }
        },
        o_.run_options);
    r.comm_ms = clocks.spans(o_.repeat);
    r.schedule_ms = summarize(std::vector<double>(o_.repeat, 0.0));
    r.verified = true;
    return r;
  }

  SchedulerResult run_static(const std::string& name) {
    SchedulerResult r;
    r.scheduler = name;
    r.is_static = true;
    // The papers' "comp" is one processor's scheduling time: oneTBB (CGM's
    // CCOM build) gets this thread alone.
    tbb::task_arena one_thread(1);
    one_thread.initialize();  // not on the clock
    const std::uint64_t seed = derive_seed(o_.seed, 1);
    Schedule schedule;
    std::vector<double> ms;
    for (std::uint32_t k = 0; k < o_.repeat; ++k) {
      const auto t0 = Clock::now();
      schedule = one_thread.execute([&] { return make_schedule(name, m_, ScheduleOptions{seed, o_.max_phases}); });
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    r.schedule_ms = summarize(std::move(ms));
    validate(schedule, m_);
    r.phases = schedule.phases.size();
    const std::vector<ProcessPlan> plans = make_process_plans(schedule, m_);

    Clocks clocks(n_, o_.repeat);
    r.job = rt_.run(
        n_,
        [&](Process& p) -> Task<void> {
          ExchangeBuffers& b = *buffers_[p.rank()];
          const ProcessPlan& plan = plans[p.rank()];
          for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) {
            co_await begin_repetition(p, b);
            clocks.start(rep, p.rank());
            co_await execute(p, plan, b);
            clocks.end(rep, p.rank());
            co_await finish_repetition(p, b, r.scheduler, rep);
          }
        },
        o_.run_options);
    r.comm_ms = clocks.spans(o_.repeat);
    r.verified = true;
    return r;
  }

  // Each repetition: Generate_Recv by active messages (timed as schedule_ms),
  // a barrier, then DRS_N itself (comm_ms).
  SchedulerResult run_drsn() {
    SchedulerResult r;
    r.scheduler = "drsn";
    GenerateRecvByActiveMessages generate(n_);
    RunOptions options = o_.run_options;
    generate.install(options);
    Clocks recv_clocks(n_, o_.repeat), clocks(n_, o_.repeat);
    std::vector<std::uint64_t> inquiries(std::size_t{n_} * o_.repeat, 0);
    r.job = rt_.run(
        n_,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          ExchangeBuffers& b = *buffers_[me];
          for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) {
            co_await begin_repetition(p, b);
            recv_clocks.start(rep, me);
            const std::vector<MatrixEntry> recvl = co_await generate.run(p, b.row());
            recv_clocks.end(rep, me);
            co_await p.barrier();
            clocks.start(rep, me);
            const DrsnStats stats = co_await execute_drsn(
                p, recvl, b, DrsnOptions{derive_seed(o_.seed, 2 + rep), o_.drsn_retry_yields, nullptr});
            clocks.end(rep, me);
            inquiries[std::size_t{rep} * n_ + me] = stats.inquiries;
            co_await finish_repetition(p, b, r.scheduler, rep);
          }
        },
        options);
    r.comm_ms = clocks.spans(o_.repeat);
    r.schedule_ms = recv_clocks.spans(o_.repeat);
    for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) {
      std::uint64_t total = 0;
      for (Rank i = 0; i < n_; ++i) total += inquiries[std::size_t{rep} * n_ + i];
      r.inquiry_samples.push_back(total);
    }
    std::vector<std::uint64_t> sorted = r.inquiry_samples;
    std::sort(sorted.begin(), sorted.end());
    r.inquiries = sorted[sorted.size() / 2];
    r.verified = true;
    return r;
  }

  // Both Generate_Recv methods, one after the other in each repetition, each
  // checked against the matrix's column.
  GenerateRecvTimes time_generate_recv() {
    GenerateRecvByActiveMessages generate(n_);
    RunOptions options = o_.run_options;
    generate.install(options);
    Clocks concat(n_, o_.repeat), am(n_, o_.repeat);
    rt_.run(
        n_,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          for (std::uint32_t rep = 0; rep < o_.repeat; ++rep) {
            co_await p.barrier();
            concat.start(rep, me);
            const auto by_concat = co_await generate_recv_concat(p, m_.row(me));
            concat.end(rep, me);
            co_await p.barrier();
            am.start(rep, me);
            const auto by_am = co_await generate.run(p, m_.row(me));
            am.end(rep, me);
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
    return GenerateRecvTimes{concat.spans(o_.repeat), am.spans(o_.repeat)};
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
  const std::size_t k = samples.size();
  t.median = k % 2 ? samples[k / 2] : (samples[k / 2 - 1] + samples[k / 2]) / 2;
  t.min = samples.front();
  t.max = samples.back();
  return t;
}

}  // namespace switchyard::schedulers
