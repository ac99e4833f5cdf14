#include "switchyard/schedulers/redistribution/redistribution_plan.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>

#include "switchyard/schedulers/optimal.hpp"

namespace switchyard::redistribution {

using schedulers::Schedule;
using schedulers::Transfer;

namespace {
constexpr std::array<std::pair<ScheduleKind, std::string_view>, 5> kKindNames{{{ScheduleKind::naive, "naive"},
                                                                              {ScheduleKind::offset, "offset"},
                                                                              {ScheduleKind::table, "table"},
                                                                              {ScheduleKind::optimal, "optimal"},
                                                                              {ScheduleKind::optimal_bytes,
                                                                               "optimal-bytes"}}};
}  // namespace

std::string_view name(ScheduleKind kind) noexcept {
  for (const auto& [k, n] : kKindNames) {
    if (k == kind) return n;
  }
  return "?";
}

std::optional<ScheduleKind> parse_schedule_kind(std::string_view text) noexcept {
  for (const auto& [k, n] : kKindNames) {
    if (n == text) return k;
  }
  return std::nullopt;
}

const std::vector<ScheduleKind>& all_schedule_kinds() {
  static const std::vector<ScheduleKind> kinds{ScheduleKind::naive, ScheduleKind::offset, ScheduleKind::table,
                                               ScheduleKind::optimal, ScheduleKind::optimal_bytes};
  return kinds;
}

namespace detail {

// One dimension's share of a message: `count` runs of `length` consecutive
// local indices, the c-th starting at src + c src_stride in the source's
// local index space and at dst + c dst_stride in the target's: one LDD of the
// intersection, moved to local indices.
struct Piece {
  Index src = 0, dst = 0, length = 0, src_stride = 0, dst_stride = 0, count = 0;
};

// A message: the Cartesian product of one piece list per dimension (Lemma 2),
// its elements in row-major order over that product. Source and target walk
// the same lists, so they agree on the order without exchanging anything.
struct PairPlan {
  Rank src = 0, dst = 0;
  Index elements = 0;
  std::vector<const std::vector<Piece>*> dims;
};

// Offsets are in bytes into the message; `staging` is where the message sits
// in the process's staging area, in elements.
struct SendOp {
  std::uint32_t pair = 0;
  Index staging = 0;
  std::uint64_t offset = 0, bytes = 0;
  bool pack = false;  // the message's first piece: pack it whole
};
struct RecvOp {
  std::uint32_t pair = 0;
  Index staging = 0;
  std::uint64_t offset = 0, bytes = 0;
  bool unpack = false;  // the message's last piece: unpack it whole
};

struct ProcessStep {
  std::uint32_t phase = 0;
  Tag tag = 0;  // phase mod 2^31: pieces of one message sent in different steps never match the wrong receive
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  std::vector<std::uint32_t> local;  // messages to itself, copied straight from local_in to local_out
};

struct ProcessProgram {
  std::vector<ProcessStep> steps;
  Index in_elements = 0, out_elements = 0;  // sizes of local_in and local_out
  std::vector<Index> src_strides, dst_strides;  // row-major strides of those arrays
  Index send_staging = 0, recv_staging = 0;     // staging area sizes, in elements
};

struct PlanData {
  PlanData(Layout s, Layout t) : source(std::move(s)), target(std::move(t)) {}
  Layout source, target;
  ScheduleKind kind = ScheduleKind::table;
  CommTable com;
  SchedulingTable cs;
  Schedule schedule;
  bool contention_free = false;
  std::string method;
  PlanTimings timings;
  // pieces[d][i_d * P'_d + j_d]: dimension d's pieces between grid coordinates i_d and j_d.
  std::vector<std::vector<std::vector<Piece>>> pieces;
  std::vector<PairPlan> pairs;
  std::vector<ProcessProgram> programs;  // one per process of the job
};

}  // namespace detail

namespace {

using detail::PairPlan;
using detail::Piece;
using detail::PlanData;
using detail::ProcessProgram;
using detail::ProcessStep;

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::vector<Index> row_major_strides(const std::vector<Index>& extents) {
  std::vector<Index> s(extents.size(), 1);
  for (std::size_t d = extents.size(); d-- > 1;) s[d - 1] = s[d] * extents[d];
  return s;
}

// Dimension d's pieces between every pair of grid coordinates: the LDD
// intersections, their first index and strides mapped to local indices on
// both sides. A piece's stride is either the period lcm(s, s') or the stride
// of blocks lying inside one block of the other side (ldd.cpp), so local
// indices advance by a constant per repetition on both sides.
std::vector<std::vector<Piece>> dimension_pieces(const Layout& src, const Layout& dst, std::size_t d) {
  const Index p = src.grid(d), q = dst.grid(d);
  std::vector<std::vector<Piece>> out(static_cast<std::size_t>(p * q));
  for (Index i = 0; i < p; ++i) {
    const LddSet mine = src.ldd(d, i);
    for (Index j = 0; j < q; ++j) {
      auto& list = out[static_cast<std::size_t>(i * q + j)];
      for (const Ldd& l : intersect(mine, dst.ldd(d, j))) {
        Piece pc;
        pc.src = src.local_index(d, l.o);
        pc.dst = dst.local_index(d, l.o);
        pc.length = l.b;
        pc.count = l.n;
        if (l.n > 1) {
          pc.src_stride = src.local_index(d, l.o + l.s) - pc.src;
          pc.dst_stride = dst.local_index(d, l.o + l.s) - pc.dst;
        }
        list.push_back(pc);
      }
    }
  }
  return out;
}

// Copies n doubles. Runs of cyclic(2) are two elements long: a call into
// memcpy per run would cost more than the copy, so short runs are a loop.
inline void copy_run(const double* from, double* to, Index n) {
  if (n >= 16) {
    std::memcpy(to, from, static_cast<std::size_t>(n) * sizeof(double));
  } else {
    for (Index e = 0; e < n; ++e) to[e] = from[e];
  }
}

// Calls f(source offset, target offset, length) for every run of the message
// in order; the runs are contiguous along the last dimension, whose stride is 1.
template <class F>
void walk(const PairPlan& pair, std::size_t d, Index src_at, Index dst_at, const Index* src_strides,
          const Index* dst_strides, F& f) {
  const bool inner = d + 1 == pair.dims.size();
  for (const Piece& pc : *pair.dims[d]) {
    for (Index c = 0; c < pc.count; ++c) {
      const Index s = pc.src + c * pc.src_stride, t = pc.dst + c * pc.dst_stride;
      if (inner) {
        f(src_at + s, dst_at + t, pc.length);
        continue;
      }
      for (Index e = 0; e < pc.length; ++e) {
        walk(pair, d + 1, src_at + (s + e) * src_strides[d], dst_at + (t + e) * dst_strides[d], src_strides,
             dst_strides, f);
      }
    }
  }
}

template <class F>
void for_each_run(const PairPlan& pair, const Index* src_strides, const Index* dst_strides, F&& f) {
  walk(pair, 0, 0, 0, src_strides, dst_strides, f);
}

std::span<std::byte> bytes_of(double* p, std::uint64_t offset, std::uint64_t bytes) {
  return {reinterpret_cast<std::byte*>(p) + offset, static_cast<std::size_t>(bytes)};
}

// No target receives twice in one phase.
bool contention_free(const Schedule& s, Rank processes) {
  std::vector<std::uint32_t> last(processes, std::numeric_limits<std::uint32_t>::max());
  for (std::uint32_t k = 0; k < s.phases.size(); ++k) {
    for (const Transfer& t : s.phases[k]) {
      if (last[t.dst] == k) return false;
      last[t.dst] = k;
    }
  }
  return true;
}

void build_schedule(PlanData& d) {
  const schedulers::CommMatrix bytes = [&] {
    if (d.kind == ScheduleKind::optimal || d.kind == ScheduleKind::optimal_bytes) return comm_matrix(d.com);
    return schedulers::CommMatrix();
  }();
  switch (d.kind) {
    case ScheduleKind::naive:
      d.cs = naive_table(d.com);
      d.schedule = schedule_of(d.cs, d.com, "naive");
      d.method = "Fig. 1: in step k every source sends to target k";
      return;
    case ScheduleKind::offset:
      d.cs = offset_table(d.com);
      d.schedule = schedule_of(d.cs, d.com, "offset");
      d.method = "Fig. 4: in step k source i sends to target (i + k) mod P'";
      return;
    case ScheduleKind::table: {
      TableAttempt attempt = contention_free_table(d.source, d.target, d.com);
      if (!attempt.table) {
        throw TableNotApplicable("switchyard: the paper's contention-free tables do not apply to " + d.source.str() +
                                 " -> " + d.target.str() + ": " + attempt.reason +
                                 "; the optimal schedule covers every redistribution");
      }
      d.cs = std::move(attempt.table->cs);
      d.schedule = schedule_of(d.cs, d.com, "table");
      d.method = std::move(attempt.table->method);
      return;
    }
    case ScheduleKind::optimal:
      d.schedule = schedulers::schedule_optimal(bytes);
      d.cs = table_of(d.schedule, d.com.sources());
      d.method = "schedule_optimal on COM in bytes: max(K, K') steps";
      return;
    case ScheduleKind::optimal_bytes:
      d.schedule = schedulers::schedule_optimal_bytes(bytes);
      d.cs = table_of(d.schedule, d.com.sources());
      d.method = "schedule_optimal_bytes on COM in bytes: messages split into byte ranges";
      return;
  }
}

void build_programs(PlanData& d) {
  const Layout& src = d.source;
  const Layout& dst = d.target;
  const Rank n = job_processes(d.com);
  for (std::size_t k = 0; k < src.rank(); ++k) d.pieces.push_back(dimension_pieces(src, dst, k));

  // Every message, and where each pair's message is in d.pairs.
  std::vector<std::uint32_t> pair_of(std::size_t{d.com.sources()} * d.com.targets(),
                                     std::numeric_limits<std::uint32_t>::max());
  std::vector<std::vector<Index>> target_coords(dst.processes());
  for (Rank j = 0; j < dst.processes(); ++j) target_coords[j] = dst.coordinates(j);
  for (Rank i = 0; i < src.processes(); ++i) {
    const auto ci = src.coordinates(i);
    for (Rank j = 0; j < dst.processes(); ++j) {
      if (!d.com.communicates(i, j)) continue;
      PairPlan pair{i, j, d.com.elements(i, j), {}};
      for (std::size_t k = 0; k < src.rank(); ++k) {
        pair.dims.push_back(&d.pieces[k][static_cast<std::size_t>(ci[k] * dst.grid(k) + target_coords[j][k])]);
      }
      pair_of[std::size_t{i} * d.com.targets() + j] = static_cast<std::uint32_t>(d.pairs.size());
      d.pairs.push_back(std::move(pair));
    }
  }

  d.programs.resize(n);
  for (Rank r = 0; r < n; ++r) {
    ProcessProgram& prog = d.programs[r];
    // Packing walks the target's offsets too, and unpacking the source's; a
    // process that is only a source or only a target gets zero strides for the
    // side it does not have, whose offsets nothing reads.
    prog.src_strides.assign(src.rank(), 0);
    prog.dst_strides.assign(src.rank(), 0);
    if (r < src.processes()) {
      prog.in_elements = src.local_size(r);
      prog.src_strides = row_major_strides(src.local_extents(r));
    }
    if (r < dst.processes()) {
      prog.out_elements = dst.local_size(r);
      prog.dst_strides = row_major_strides(dst.local_extents(r));
    }
  }

  // The first and last phase of each message (they differ only for split messages).
  constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> first(d.pairs.size(), kNone), last(d.pairs.size(), 0);
  auto pair_index = [&](const Transfer& t) {
    const std::uint32_t p = t.src < d.com.sources() && t.dst < d.com.targets()
                                ? pair_of[std::size_t{t.src} * d.com.targets() + t.dst]
                                : kNone;
    if (p == kNone) {
      throw Error("switchyard: redistribution schedule '" + d.schedule.scheduler + "': transfer " +
                  std::to_string(t.src) + " -> " + std::to_string(t.dst) + " is not a message of COM");
    }
    return p;
  };
  for (std::uint32_t k = 0; k < d.schedule.phases.size(); ++k) {
    for (const Transfer& t : d.schedule.phases[k]) {
      const std::uint32_t p = pair_index(t);
      first[p] = std::min(first[p], k);
      last[p] = std::max(last[p], k);
    }
  }

  std::vector<Index> send_at(d.pairs.size(), -1), recv_at(d.pairs.size(), -1);  // staging offsets
  for (std::uint32_t k = 0; k < d.schedule.phases.size(); ++k) {
    auto step_of = [&](Rank r) -> ProcessStep& {
      auto& steps = d.programs[r].steps;
      if (steps.empty() || steps.back().phase != k) {
        steps.push_back(ProcessStep{k, static_cast<Tag>(k % kFirstReservedTag), {}, {}, {}});
      }
      return steps.back();
    };
    for (const Transfer& t : d.schedule.phases[k]) {
      const std::uint32_t p = pair_index(t);
      if (t.src == t.dst) {
        if (k == first[p]) step_of(t.src).local.push_back(p);
        continue;
      }
      ProcessProgram& sender = d.programs[t.src];
      ProcessProgram& receiver = d.programs[t.dst];
      if (send_at[p] < 0) {
        send_at[p] = sender.send_staging;
        sender.send_staging += d.pairs[p].elements;
      }
      if (recv_at[p] < 0) {
        recv_at[p] = receiver.recv_staging;
        receiver.recv_staging += d.pairs[p].elements;
      }
      step_of(t.src).sends.push_back({p, send_at[p], t.offset, t.bytes, k == first[p]});
      step_of(t.dst).recvs.push_back({p, recv_at[p], t.offset, t.bytes, k == last[p]});
    }
  }
}

void check_local(const char* what, Rank r, std::size_t got, Index want, const Layout& layout) {
  if (static_cast<Index>(got) != want) {
    throw InvalidArgument("switchyard: redistribution: " + std::string(what) + " of process " + std::to_string(r) +
                          " has " + std::to_string(got) + " elements, but the process owns " + std::to_string(want) +
                          " under " + layout.str());
  }
}

// One process's steps, with its staging areas.
Task<void> run_program(Process& p, const PlanData& d, const ProcessProgram& prog, std::span<const double> in,
                       std::span<double> out, double* send_staging, double* recv_staging) {
  const Index* ss = prog.src_strides.data();
  const Index* ds = prog.dst_strides.data();
  std::vector<RecvTicket> recvs;
  std::vector<SendTicket> sends;
  std::vector<std::size_t> pending;
  for (const ProcessStep& step : prog.steps) {
    recvs.clear();
    sends.clear();
    for (const auto& r : step.recvs) {
      recvs.push_back(p.post_recv_into(d.pairs[r.pair].src, bytes_of(recv_staging + r.staging, r.offset, r.bytes),
                                       step.tag));
    }
    for (const auto& s : step.sends) {
      const PairPlan& pair = d.pairs[s.pair];
      if (s.pack) {
        double* at = send_staging + s.staging;
        for_each_run(pair, ss, ds, [&](Index from, Index, Index n) {
          copy_run(in.data() + from, at, n);
          at += n;
        });
      }
      sends.push_back(p.post_send(pair.dst, bytes_of(send_staging + s.staging, s.offset, s.bytes), step.tag));
    }
    for (std::uint32_t l : step.local) {
      for_each_run(d.pairs[l], ss, ds,
                   [&](Index from, Index to, Index n) { copy_run(in.data() + from, out.data() + to, n); });
    }
    // Receives are unpacked as they complete, in whatever order they arrive
    // (with contention, a step brings a target several messages).
    pending.clear();
    for (std::size_t k = 0; k < recvs.size(); ++k) pending.push_back(k);
    while (!pending.empty()) {
      if (pending.size() > 1) {
        co_await p.wait_until(
            [&] { return std::any_of(pending.begin(), pending.end(), [&](std::size_t k) { return recvs[k].done(); }); },
            "a redistribution message");
      }
      for (std::size_t n = 0; n < pending.size();) {
        const std::size_t k = pending[n];
        if (pending.size() > 1 && !recvs[k].done()) {
          ++n;
          continue;
        }
        co_await p.wait(recvs[k]);  // checks the size against the buffer
        const auto& r = step.recvs[k];
        const PairPlan& pair = d.pairs[r.pair];
        if (recvs[k].size() != r.bytes) {
          throw Error("switchyard: redistribution: process " + std::to_string(p.rank()) + " expected " +
                      std::to_string(r.bytes) + " bytes from process " + std::to_string(pair.src) + ", got " +
                      std::to_string(recvs[k].size()));
        }
        if (r.unpack) {
          const double* at = recv_staging + r.staging;
          for_each_run(pair, ss, ds, [&](Index, Index to, Index n_run) {
            copy_run(at, out.data() + to, n_run);
            at += n_run;
          });
        }
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(n));
      }
    }
    for (auto& s : sends) co_await p.wait(s);
  }
}

}  // namespace

RedistributionPlan::RedistributionPlan(Layout source, Layout target, ScheduleKind kind)
    : data_(std::make_unique<PlanData>(std::move(source), std::move(target))) {
  PlanData& d = *data_;
  d.kind = kind;
  auto t0 = Clock::now();
  d.com = communication_table(d.source, d.target);
  d.timings.com_ms = ms_since(t0);
  t0 = Clock::now();
  build_schedule(d);
  d.timings.schedule_ms = ms_since(t0);
  t0 = Clock::now();
  build_programs(d);
  d.timings.descriptors_ms = ms_since(t0);
  d.contention_free = redistribution::contention_free(d.schedule, job_processes(d.com));
}

RedistributionPlan::~RedistributionPlan() = default;
RedistributionPlan::RedistributionPlan(RedistributionPlan&&) noexcept = default;
RedistributionPlan& RedistributionPlan::operator=(RedistributionPlan&&) noexcept = default;

const Layout& RedistributionPlan::source() const noexcept { return data_->source; }
const Layout& RedistributionPlan::target() const noexcept { return data_->target; }
ScheduleKind RedistributionPlan::kind() const noexcept { return data_->kind; }
Rank RedistributionPlan::processes() const noexcept { return job_processes(data_->com); }
const CommTable& RedistributionPlan::com() const noexcept { return data_->com; }
const SchedulingTable& RedistributionPlan::cs() const noexcept { return data_->cs; }
const Schedule& RedistributionPlan::schedule() const noexcept { return data_->schedule; }
std::uint32_t RedistributionPlan::steps() const noexcept { return static_cast<std::uint32_t>(data_->schedule.phases.size()); }
bool RedistributionPlan::contention_free() const noexcept { return data_->contention_free; }
const std::string& RedistributionPlan::method() const noexcept { return data_->method; }
const PlanTimings& RedistributionPlan::timings() const noexcept { return data_->timings; }

RedistributionBuffers::RedistributionBuffers(const RedistributionPlan& plan, Rank process)
    : plan_(plan.data_.get()), process_(process) {
  if (process >= plan.processes()) {
    throw InvalidArgument("switchyard: RedistributionBuffers: process " + std::to_string(process) +
                          " is not one of the plan's " + std::to_string(plan.processes()));
  }
  const ProcessProgram& prog = plan_->programs[process];
  send_.reset(new double[static_cast<std::size_t>(prog.send_staging)]);
  recv_.reset(new double[static_cast<std::size_t>(prog.recv_staging)]);
}

Task<void> RedistributionPlan::run(Process& p, std::span<const double> local_in, std::span<double> local_out) const {
  if (p.rank() >= processes()) co_return;
  RedistributionBuffers buffers(*this, p.rank());
  co_await run(p, local_in, local_out, buffers);
}

Task<void> RedistributionPlan::run(Process& p, std::span<const double> local_in, std::span<double> local_out,
                                   RedistributionBuffers& buffers) const {
  const PlanData& d = *data_;
  if (p.size() < processes()) {
    throw InvalidArgument("switchyard: redistribution from " + d.source.str() + " to " + d.target.str() + " needs " +
                          std::to_string(processes()) + " processes, the job has " + std::to_string(p.size()));
  }
  if (p.rank() >= processes()) co_return;
  if (buffers.plan_ != &d || buffers.process_ != p.rank()) {
    throw InvalidArgument("switchyard: redistribution: process " + std::to_string(p.rank()) +
                          " was given the buffers of another plan or process");
  }
  const ProcessProgram& prog = d.programs[p.rank()];
  check_local("local_in", p.rank(), local_in.size(), prog.in_elements, d.source);
  check_local("local_out", p.rank(), local_out.size(), prog.out_elements, d.target);
  co_await run_program(p, d, prog, local_in, local_out, buffers.send_.get(), buffers.recv_.get());
}

double RedistributionPlan::execute(Runtime& rt, std::span<const std::span<const double>> local_in,
                                   std::span<const std::span<double>> local_out, RunOptions options) const {
  const PlanData& d = *data_;
  if (local_in.size() != d.source.processes() || local_out.size() != d.target.processes()) {
    throw InvalidArgument("switchyard: redistribution from " + d.source.str() + " to " + d.target.str() + ": " +
                          std::to_string(local_in.size()) + " source and " + std::to_string(local_out.size()) +
                          " target arrays, for " + std::to_string(d.source.processes()) + " sources and " +
                          std::to_string(d.target.processes()) + " targets");
  }
  for (Rank r = 0; r < d.source.processes(); ++r) {
    check_local("local_in", r, local_in[r].size(), d.programs[r].in_elements, d.source);
  }
  for (Rank r = 0; r < d.target.processes(); ++r) {
    check_local("local_out", r, local_out[r].size(), d.programs[r].out_elements, d.target);
  }
  const Rank n = processes();
  std::vector<Clock::time_point> start(n), end(n);
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank r = p.rank();
        RedistributionBuffers buffers(*this, r);
        std::span<const double> in;
        std::span<double> out;
        if (r < local_in.size()) in = local_in[r];
        if (r < local_out.size()) out = local_out[r];
        co_await p.barrier();
        start[r] = Clock::now();
        co_await run(p, in, out, buffers);
        end[r] = Clock::now();
      },
      std::move(options));
  return std::chrono::duration<double, std::milli>(*std::max_element(end.begin(), end.end()) -
                                                   *std::min_element(start.begin(), start.end()))
      .count();
}

void redistribute(Runtime& rt, const Layout& source, const Layout& target,
                  std::span<const std::span<const double>> local_in, std::span<const std::span<double>> local_out,
                  ScheduleKind kind) {
  RedistributionPlan(source, target, kind).execute(rt, local_in, local_out);
}

}  // namespace switchyard::redistribution
