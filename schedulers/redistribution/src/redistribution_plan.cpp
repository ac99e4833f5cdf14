#include "switchyard/schedulers/redistribution/redistribution_plan.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iterator>
#include <limits>
#include <span>
#include <string>

#include "switchyard/cache_line.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/schedulers/optimal.hpp"
#include "switchyard/span_timer.hpp"

namespace switchyard::schedulers::redistribution {

using schedulers::Schedule;
using schedulers::Transfer;

namespace {
constexpr std::array<std::pair<ScheduleKind, std::string_view>, 5> kKindNames{
    {{ScheduleKind::naive, "naive"},
     {ScheduleKind::offset, "offset"},
     {ScheduleKind::table, "table"},
     {ScheduleKind::optimal, "optimal"},
     {ScheduleKind::optimal_bytes, "optimal-bytes"}}};
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

// An entry of a process's exchange: its message, and where the message sits
// in the process's staging area, in elements.
struct StagedMessage {
  std::uint32_t pair = 0;
  Index staging = 0;
};

struct ProcessProgram {
  Index in_elements = 0, out_elements = 0;  // sizes of local_in and local_out
  std::vector<Index> src_strides, dst_strides;  // row-major strides of those arrays
  // By entry of the exchange plan's sends(r) / receives(r): both sorted by peer.
  std::vector<StagedMessage> sends, recvs;
  std::vector<std::uint32_t> local;  // messages to itself, copied straight from local_in to local_out
  // By entry of the direct plan's sends(r) / receives(r) (PlanData::direct):
  // the messages' pairs, its message to itself among them, sorted by peer.
  std::vector<std::uint32_t> direct_sends, direct_recvs;
  Index send_staging = 0, recv_staging = 0;  // staging area sizes, in elements
};

// The staging memory the plan keeps for one process, made on its first run
// through buffers.
// Claimed for a run by `busy` (acquire; release when the run ends), so that
// whichever thread runs that process next sees the memory as the last left it.
struct alignas(kCacheLine) StagingSlot {
  std::atomic<bool> busy{false};
  std::unique_ptr<double[]> send, recv;  // not zero-filled: every element is written before it is read
};
static_assert(kOwnsCacheLines<StagingSlot>, "shared across cores: cache lines of its own");

struct PlanData {
  PlanData(Layout s, Layout t) : source(std::move(s)), target(std::move(t)) {}
  Layout source, target;
  ScheduleKind kind = ScheduleKind::table;
  schedulers::ExchangeExecution execution = schedulers::ExchangeExecution::compiled;
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
  std::optional<schedulers::ExchangePlan> exchange;
  // Compiled plans only: the exchange with each process's message to itself
  // among the others, for runs that copy straight between the processes'
  // arrays (one node). A core's copies then take each target's own pieces
  // with those from other processes, in rounds along its array (fig9: two
  // in three of a target's elements are its own, in pieces of two doubles
  // between the others'), rather than a pass over the whole array after
  // the exchange (docs/benchmarks.md, "A plan's first run in a job").
  std::optional<schedulers::ExchangePlan> direct;
  std::unique_ptr<StagingSlot[]> staging;  // one per process of the job
};

}  // namespace detail

namespace {

using detail::PairPlan;
using detail::Piece;
using detail::PlanData;
using detail::ProcessProgram;
using detail::StagedMessage;
using detail::StagingSlot;

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

// Copies a group of K pieces that repeat alike (one length, count and pair of
// strides; each at its own offsets), `count` periods of them: in the c-th,
// each piece's run of N doubles from from + pc.src + c src_stride to
// to + pc.dst + c dst_stride. A fixed-size copy each: one load and one store.
// The group's numbers are read into locals first: a copy may write any
// memory as far as the compiler knows, so read from the group they would be
// read again for every run (1.7 x the time of the copies alone).
template <int N, std::size_t K>
void copy_fixed_periods(const double* from, double* to, const Piece* group) {
  Index src_at[K], dst_at[K];
  for (std::size_t j = 0; j < K; ++j) src_at[j] = group[j].src, dst_at[j] = group[j].dst;
  const Index count = group[0].count, src_stride = group[0].src_stride, dst_stride = group[0].dst_stride;
  for (Index c = 0; c < count; ++c, from += src_stride, to += dst_stride) {
    for (std::size_t j = 0; j < K; ++j) std::memcpy(to + dst_at[j], from + src_at[j], N * sizeof(double));
  }
}

// Runs of N doubles, by the size of the group; groups of more than 4 pieces
// (and runs of more than 4 doubles) go through the loop of copy_periods.
template <int N>
bool copy_periods_of(const double* from, double* to, std::span<const Piece> group) {
  switch (group.size()) {
    case 1:
      copy_fixed_periods<N, 1>(from, to, group.data());
      return true;
    case 2:
      copy_fixed_periods<N, 2>(from, to, group.data());
      return true;
    case 3:
      copy_fixed_periods<N, 3>(from, to, group.data());
      return true;
    case 4:
      copy_fixed_periods<N, 4>(from, to, group.data());
      return true;
    default:
      return false;
  }
}

// The same for runs of any length. Runs of cyclic(b) are b elements long: a
// call into memcpy per run of 2 would cost more than the copy, so the short
// lengths are fixed-size copies, and a lone piece whose runs continue each
// other on both sides is one memcpy. The pieces of a group go period by
// period, not one after the other: each piece's runs lie a period apart, less
// than a cache line at cyclic(6), so a pass per piece would stream every line
// of both arrays once per piece (two pieces: 2.2 x the time of one pass).
void copy_periods(const double* from, double* to, std::span<const Piece> group) {
  const Piece& shape = group.front();
  if (group.size() == 1 &&
      (shape.count == 1 || (shape.src_stride == shape.length && shape.dst_stride == shape.length))) {
    std::memcpy(to + shape.dst, from + shape.src,
                static_cast<std::size_t>(shape.length * shape.count) * sizeof(double));
    return;
  }
  switch (shape.length) {
    case 1:
      if (copy_periods_of<1>(from, to, group)) return;
      break;
    case 2:
      if (copy_periods_of<2>(from, to, group)) return;
      break;
    case 3:
      if (copy_periods_of<3>(from, to, group)) return;
      break;
    case 4:
      if (copy_periods_of<4>(from, to, group)) return;
      break;
    default:
      break;
  }
  const Index length = shape.length, count = shape.count, src_stride = shape.src_stride, dst_stride = shape.dst_stride;
  for (Index c = 0; c < count; ++c, from += src_stride, to += dst_stride) {
    for (const Piece& pc : group)
      std::memcpy(to + pc.dst, from + pc.src, static_cast<std::size_t>(length) * sizeof(double));
  }
}

// Copies `count` runs of `length` doubles, the c-th from from + c src_stride
// to to + c dst_stride: a group of one piece.
void copy_runs(const double* from, double* to, Index length, Index count, Index src_stride, Index dst_stride) {
  const Piece run{
      .src = 0, .dst = 0, .length = length, .src_stride = src_stride, .dst_stride = dst_stride, .count = count};
  copy_periods(from, to, std::span(&run, 1));
}

// Whether two pieces repeat alike: copy_periods takes them as one group.
bool alike(const Piece& a, const Piece& b) {
  return a.length == b.length && a.count == b.count && a.src_stride == b.src_stride && a.dst_stride == b.dst_stride;
}

// Calls f(source offset, target offset, pieces) for every list of pieces of
// the message's last dimension, in order. A piece's runs, `count` of them,
// are each `length` elements long and contiguous (the last dimension's
// stride is 1), the c-th at source offset + pc.src + c pc.src_stride and
// target offset + pc.dst + c pc.dst_stride.
template <class F>
void walk(const PairPlan& pair, std::size_t d, Index src_at, Index dst_at, const Index* src_strides,
          const Index* dst_strides, F& f) {
  if (d + 1 == pair.dims.size()) {
    f(src_at, dst_at, std::span<const Piece>(*pair.dims[d]));
    return;
  }
  for (const Piece& pc : *pair.dims[d]) {
    for (Index c = 0; c < pc.count; ++c) {
      const Index s = pc.src + c * pc.src_stride, t = pc.dst + c * pc.dst_stride;
      for (Index e = 0; e < pc.length; ++e) {
        walk(pair, d + 1, src_at + (s + e) * src_strides[d], dst_at + (t + e) * dst_strides[d], src_strides,
             dst_strides, f);
      }
    }
  }
}

template <class F>
void for_each_piece_list(const PairPlan& pair, const Index* src_strides, const Index* dst_strides, F&& f) {
  walk(pair, 0, 0, 0, src_strides, dst_strides, f);
}

// Calls f(source offset, target offset, piece) for every piece of the
// message's last dimension, in order (see walk).
template <class F>
void for_each_piece(const PairPlan& pair, const Index* src_strides, const Index* dst_strides, F&& f) {
  for_each_piece_list(pair, src_strides, dst_strides, [&](Index src_at, Index dst_at, std::span<const Piece> pieces) {
    for (const Piece& pc : pieces) f(src_at, dst_at, pc);
  });
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

  // Every message, in (source, target) order.
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

  // Each process's exchange entries: walking the pairs in (source, target)
  // order lists a sender's messages by target and a receiver's by source, as
  // the exchange plan's rows and columns are.
  for (std::uint32_t p = 0; p < d.pairs.size(); ++p) {
    const PairPlan& pair = d.pairs[p];
    d.programs[pair.src].direct_sends.push_back(p);
    d.programs[pair.dst].direct_recvs.push_back(p);
    if (pair.src == pair.dst) {
      d.programs[pair.src].local.push_back(p);
      continue;
    }
    ProcessProgram& sender = d.programs[pair.src];
    ProcessProgram& receiver = d.programs[pair.dst];
    sender.sends.push_back({p, sender.send_staging});
    sender.send_staging += pair.elements;
    receiver.recvs.push_back({p, receiver.recv_staging});
    receiver.recv_staging += pair.elements;
  }
}

// The exchange: COM in bytes without its diagonal, the kind's schedule
// without its transfers to oneself (local copies instead); and for a compiled
// plan the direct one, with both. A job may be larger than the grids: its
// other processes take no part.
schedulers::ExchangePlan exchange_plan(const PlanData& d, bool to_oneself) {
  const Rank n = job_processes(d.com);
  schedulers::CommMatrix m(n);
  for (const PairPlan& pair : d.pairs) {
    if (to_oneself || pair.src != pair.dst) {
      m.set(pair.src, pair.dst, static_cast<std::uint64_t>(pair.elements) * sizeof(double));
    }
  }
  Schedule s;
  s.processes = n;
  s.scheduler = d.schedule.scheduler;
  for (const schedulers::Phase& phase : d.schedule.phases) {
    schedulers::Phase& kept = s.phases.emplace_back();
    std::copy_if(phase.begin(), phase.end(), std::back_inserter(kept),
                 [&](const Transfer& t) { return to_oneself || t.src != t.dst; });
  }
  schedulers::ExchangePlanOptions options;
  options.allow_larger_communicator = true;
  options.execution = d.execution;
  // Made on every node alike; its compiled runs' keys are each node's own,
  // never sent (plan_keys.cpp, local_compiled_key).
  return schedulers::ExchangePlan::from_schedule(m, std::move(s), std::move(options));
}

void build_exchange(PlanData& d) {
  d.exchange.emplace(exchange_plan(d, false));
  if (d.execution == schedulers::ExchangeExecution::compiled) d.direct.emplace(exchange_plan(d, true));
  d.staging = std::make_unique<StagingSlot[]>(job_processes(d.com));
}

void check_local(const char* what, Rank r, std::size_t got, Index want, const Layout& layout) {
  if (static_cast<Index>(got) != want) {
    throw InvalidArgument("switchyard: redistribution: " + std::string(what) + " of process " + std::to_string(r) +
                          " has " + std::to_string(got) + " elements, but the process owns " + std::to_string(want) +
                          " under " + layout.str());
  }
}

void allocate_staging(const ProcessProgram& prog, std::unique_ptr<double[]>& send, std::unique_ptr<double[]>& recv) {
  send.reset(new double[static_cast<std::size_t>(prog.send_staging)]);
  recv.reset(new double[static_cast<std::size_t>(prog.recv_staging)]);
}

// A process's messages as the exchange sees them. Described (the direct
// plan's, its message to itself among them): where they lie in local_in and
// local_out, from which a compiled run on one node copies each element once,
// straight from its source's local_in into its target's local_out
// (exchange_hooks.hpp). And in staging areas, for a run through
// buffers (the message execution, a job across nodes): packed from local_in
// just before they go out, unpacked into local_out as soon as they are in.
// The staging memory is made on first use: a process whose runs are all
// direct never makes it.
class ProcessHooks final : public schedulers::ExchangeHooks {
 public:
  ProcessHooks(const PlanData& d, const ProcessProgram& prog, std::span<const double> in, std::span<double> out,
               std::unique_ptr<double[]>& send, std::unique_ptr<double[]>& recv) noexcept
      : d_(d), prog_(prog), in_(in), out_(out), send_(send), recv_(recv) {}

  bool describes_memory() const override { return true; }
  void describe_send(std::size_t i, std::vector<schedulers::StridedRun>& runs) override {
    for_each_piece(d_.pairs[prog_.direct_sends[i]], prog_.src_strides.data(), prog_.dst_strides.data(),
                   [&](Index src_at, Index, const Piece& pc) {
                     runs.push_back(strided(src_at + pc.src, pc.length, pc.src_stride, pc.count));
                   });
  }
  void describe_recv(std::size_t i, std::vector<schedulers::StridedRun>& runs) override {
    for_each_piece(d_.pairs[prog_.direct_recvs[i]], prog_.src_strides.data(), prog_.dst_strides.data(),
                   [&](Index, Index dst_at, const Piece& pc) {
                     runs.push_back(strided(dst_at + pc.dst, pc.length, pc.dst_stride, pc.count));
                   });
  }
  schedulers::ExchangeMemory memory() override { return {std::as_bytes(in_), std::as_writable_bytes(out_)}; }

  std::span<const std::byte> send_buffer(std::size_t i) override { return message(send_staging(), prog_.sends[i]); }
  std::span<std::byte> recv_buffer(std::size_t i) override { return message(recv_staging(), prog_.recvs[i]); }
  void before_send(std::size_t i) override {
    double* at = send_staging() + prog_.sends[i].staging;
    for_each_piece(d_.pairs[prog_.sends[i].pair], prog_.src_strides.data(), prog_.dst_strides.data(),
                   [&](Index src_at, Index, const Piece& pc) {
                     copy_runs(in_.data() + src_at + pc.src, at, pc.length, pc.count, pc.src_stride, pc.length);
                     at += pc.length * pc.count;
                   });
  }
  void after_receive(std::size_t i) override {
    const double* at = recv_staging() + prog_.recvs[i].staging;
    for_each_piece(d_.pairs[prog_.recvs[i].pair], prog_.src_strides.data(), prog_.dst_strides.data(),
                   [&](Index, Index dst_at, const Piece& pc) {
                     copy_runs(at, out_.data() + dst_at + pc.dst, pc.length, pc.count, pc.length, pc.dst_stride);
                     at += pc.length * pc.count;
                   });
  }
  // Pieces alike in a row go together, period by period (copy_periods).
  void copy_local() {
    for (std::uint32_t l : prog_.local) {
      for_each_piece_list(d_.pairs[l], prog_.src_strides.data(), prog_.dst_strides.data(),
                          [&](Index src_at, Index dst_at, std::span<const Piece> pieces) {
                            for (std::size_t i = 0, j = 1; i < pieces.size(); i = j++) {
                              while (j < pieces.size() && alike(pieces[i], pieces[j])) ++j;
                              copy_periods(in_.data() + src_at, out_.data() + dst_at, pieces.subspan(i, j - i));
                            }
                          });
    }
  }

 private:
  // `count` runs of `length` doubles, `stride` apart, from local index `first` on.
  static schedulers::StridedRun strided(Index first, Index length, Index stride, Index count) {
    constexpr auto kDouble = static_cast<std::uint64_t>(sizeof(double));
    return {static_cast<std::uint64_t>(first) * kDouble, static_cast<std::uint64_t>(length) * kDouble,
            static_cast<std::uint64_t>(stride) * kDouble, static_cast<std::uint64_t>(count)};
  }
  double* send_staging() {
    if (!send_) allocate_staging(prog_, send_, recv_);
    return send_.get();
  }
  double* recv_staging() {
    if (!recv_) allocate_staging(prog_, send_, recv_);
    return recv_.get();
  }
  std::span<std::byte> message(double* base, const StagedMessage& m) const {
    return bytes_of(base + m.staging, 0, static_cast<std::uint64_t>(d_.pairs[m.pair].elements) * sizeof(double));
  }
  const PlanData& d_;
  const ProcessProgram& prog_;
  std::span<const double> in_;
  std::span<double> out_;
  std::unique_ptr<double[]>& send_;
  std::unique_ptr<double[]>& recv_;
};

// Whether comm.rank() takes part; throws, before anything is sent, for a
// communicator too small or a block of the wrong size.
bool takes_part(const PlanData& d, const Communicator& comm, std::size_t in, std::size_t out) {
  const Rank n = job_processes(d.com);
  if (comm.size() < n) {
    throw InvalidArgument("switchyard: redistribution from " + d.source.str() + " to " + d.target.str() + " needs " +
                          std::to_string(n) + " processes, the communicator has " + std::to_string(comm.size()));
  }
  const Rank r = comm.rank();
  if (r >= n) return false;
  check_local("local_in", r, in, d.programs[r].in_elements, d.source);
  check_local("local_out", r, out, d.programs[r].out_elements, d.target);
  return true;
}

Task<void> run_program(const PlanData& d, Communicator comm, std::span<const double> in, std::span<double> out,
                       std::unique_ptr<double[]>& send, std::unique_ptr<double[]>& recv) {
  ProcessHooks hooks(d, d.programs[comm.rank()], in, out, send, recv);
  const bool direct = d.direct && comm.nodes() == 1;  // its own pieces copied in the exchange too
  co_await (direct ? *d.direct : *d.exchange).run(comm.library(kRedistributionLibrary), hooks);
  if (!direct) hooks.copy_local();
}

// Ends a run's claim on its process's staging slot, however the run ends.
struct SlotClaim {
  StagingSlot& slot;
  ~SlotClaim() { slot.busy.store(false, std::memory_order_release); }
};

Task<void> run_with_plan_staging(const PlanData& d, Communicator comm, std::span<const double> in,
                                 std::span<double> out) {
  if (!takes_part(d, comm, in.size(), out.size())) co_return;
  StagingSlot& slot = d.staging[comm.rank()];
  if (slot.busy.exchange(true, std::memory_order_acquire)) {
    // A process of the same rank runs the plan at this moment, on another
    // communicator: this run stages, if it does, in memory of its own.
    std::unique_ptr<double[]> send, recv;
    co_await run_program(d, comm, in, out, send, recv);
    co_return;
  }
  const SlotClaim claim{slot};
  co_await run_program(d, comm, in, out, slot.send, slot.recv);
}

Task<void> run_with_buffers(const PlanData& d, Communicator comm, std::span<const double> in, std::span<double> out,
                            const PlanData* buffers_plan, Rank buffers_process, std::unique_ptr<double[]>& send,
                            std::unique_ptr<double[]>& recv) {
  if (!takes_part(d, comm, in.size(), out.size())) co_return;
  if (buffers_plan != &d || buffers_process != comm.rank()) {
    throw InvalidArgument("switchyard: redistribution: process " + std::to_string(comm.rank()) +
                          " was given the buffers of another plan or process");
  }
  co_await run_program(d, comm, in, out, send, recv);
}

}  // namespace

RedistributionPlan::RedistributionPlan(Layout source, Layout target, ScheduleKind kind,
                                       schedulers::ExchangeExecution execution)
    : data_(std::make_unique<PlanData>(std::move(source), std::move(target))) {
  PlanData& d = *data_;
  d.kind = kind;
  d.execution = execution;
  auto t0 = Clock::now();
  d.com = communication_table(d.source, d.target);
  check_tables_fit(d.com);
  d.timings.com_ms = ms_since(t0);
  t0 = Clock::now();
  build_schedule(d);
  d.timings.schedule_ms = ms_since(t0);
  t0 = Clock::now();
  build_programs(d);
  build_exchange(d);
  d.timings.descriptors_ms = ms_since(t0);
  d.contention_free = redistribution::contention_free(d.schedule, job_processes(d.com));
}

RedistributionPlan::~RedistributionPlan() = default;
RedistributionPlan::RedistributionPlan(RedistributionPlan&&) noexcept = default;
RedistributionPlan& RedistributionPlan::operator=(RedistributionPlan&&) noexcept = default;

const Layout& RedistributionPlan::source() const noexcept { return data_->source; }
const Layout& RedistributionPlan::target() const noexcept { return data_->target; }
ScheduleKind RedistributionPlan::kind() const noexcept { return data_->kind; }
schedulers::ExchangeExecution RedistributionPlan::execution() const noexcept { return data_->execution; }
Rank RedistributionPlan::processes() const noexcept { return job_processes(data_->com); }
const CommTable& RedistributionPlan::com() const noexcept { return data_->com; }
const SchedulingTable& RedistributionPlan::cs() const noexcept { return data_->cs; }
const Schedule& RedistributionPlan::schedule() const noexcept { return data_->schedule; }
std::uint32_t RedistributionPlan::steps() const noexcept {
  return static_cast<std::uint32_t>(data_->schedule.phases.size());
}
bool RedistributionPlan::contention_free() const noexcept { return data_->contention_free; }
const std::string& RedistributionPlan::method() const noexcept { return data_->method; }
const PlanTimings& RedistributionPlan::timings() const noexcept { return data_->timings; }

RedistributionBuffers::RedistributionBuffers(const RedistributionPlan& plan, Rank process)
    : plan_(plan.data_.get()), process_(process) {
  if (process >= plan.processes()) {
    throw InvalidArgument("switchyard: RedistributionBuffers: process " + std::to_string(process) +
                          " is not one of the plan's " + std::to_string(plan.processes()));
  }
  allocate_staging(plan_->programs[process], send_, recv_);
}

// The public calls copy the communicator into the coroutine's frame: a
// caller's temporary (a Process converted on the way in) may be gone by the
// time the task is awaited.
Task<void> RedistributionPlan::run(const Communicator& comm, std::span<const double> local_in,
                                   std::span<double> local_out) const {
  return run_with_plan_staging(*data_, comm, local_in, local_out);
}

Task<void> RedistributionPlan::run(const Communicator& comm, std::span<const double> local_in,
                                   std::span<double> local_out, RedistributionBuffers& buffers) const {
  return run_with_buffers(*data_, comm, local_in, local_out, buffers.plan_, buffers.process_, buffers.send_,
                          buffers.recv_);
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
  SpanTimer timer(rt, 1);
  rt.run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank r = p.rank();
        std::span<const double> in;
        std::span<double> out;
        if (r < local_in.size()) in = local_in[r];
        if (r < local_out.size()) out = local_out[r];
        co_await p.barrier();
        timer.start(0, p);
        co_await run(p, in, out);
        timer.end(0, p);
      },
      std::move(options));
  return timer.milliseconds(rt).front();
}

void redistribute(Runtime& rt, const Layout& source, const Layout& target,
                  std::span<const std::span<const double>> local_in, std::span<const std::span<double>> local_out,
                  ScheduleKind kind) {
  RedistributionPlan(source, target, kind).execute(rt, local_in, local_out);
}

}  // namespace switchyard::schedulers::redistribution
