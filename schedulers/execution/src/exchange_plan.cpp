#include "switchyard/schedulers/exchange_plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "gathered_rows.hpp"
#include "hooks_support.hpp"
#include "scheduler_support.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/model/machine_file.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/exchange.hpp"
#include "switchyard/schedulers/executor.hpp"
#include "switchyard/schedulers/generate_recv.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

namespace detail {

enum class Scheme : std::uint8_t { phased, ac, drsn };

// One member's side of a plan: its messages and, for phased plans, its program.
struct ExchangePart {
  std::vector<MatrixEntry> sends, receives;
  ProcessPlan program;
};

// A member's count of its runs, from which DRS_N's order stream of each run
// derives. Atomic: two processes of one rank may run the plan at once, on two
// communicators of the same size. A cache line each: members on different
// cores count at the same time.
struct alignas(64) RunCount {
  std::atomic<std::uint64_t> runs{0};
};

struct ExchangePlanData {
  ExchangePlanOptions options;
  Scheme scheme = Scheme::phased;
  Rank processes = 0;
  std::optional<Schedule> schedule;  // phased plans from the whole pattern
  std::uint64_t phases = 0;
  double schedule_ms = 0;
  std::optional<Rank> owner;              // create(): the member whose part `parts` holds
  std::vector<ExchangePart> parts;        // by rank; create(): the owner's alone
  std::unique_ptr<RunCount[]> run_counts;  // one per part
};

}  // namespace detail

namespace {

using detail::ExchangePart;
using detail::ExchangePlanData;
using detail::Scheme;
using Clock = std::chrono::steady_clock;

// options with "auto" replaced by the scheduler it chooses for m.
ExchangePlanOptions resolve_auto(const CommMatrix& m, ExchangePlanOptions options) {
  if (options.scheduler != kAutoScheduler) return options;
  const model::MachineFile machine = options.machine.value_or(model::default_machine_file());
  options.scheduler = choose_exchange_scheduler(m, machine, ScheduleOptions{options.seed, options.max_phases});
  options.chosen_by_auto = true;
  return options;
}

Scheme scheme_of(const std::string& name) {
  if (const SchedulerDescriptor* d = find_scheduler(name)) {
    switch (d->online) {
      case OnlineScheme::ac: return Scheme::ac;
      case OnlineScheme::drsn: return Scheme::drsn;
      case OnlineScheme::none: return Scheme::phased;
    }
  }
  std::string known;
  for (const auto& k : default_exchange_schedulers()) known += (known.empty() ? "" : ", ") + k;
  throw InvalidArgument("switchyard: ExchangePlan: unknown scheduler '" + name + "' (known: " + known + ")");
}

std::unique_ptr<ExchangePlanData> new_data(ExchangePlanOptions options, Scheme scheme, Rank processes,
                                           std::size_t parts) {
  auto d = std::make_unique<ExchangePlanData>();
  d->scheme = scheme;
  d->options = std::move(options);
  d->processes = processes;
  d->parts.resize(parts);
  d->run_counts = std::make_unique<detail::RunCount[]>(parts);
  return d;
}

// Every process's row and column of m.
void set_entries(ExchangePlanData& d, const CommMatrix& m) {
  for (Rank i = 0; i < m.size(); ++i) {
    d.parts[i].sends.assign(m.row(i).begin(), m.row(i).end());
    for (const MatrixEntry& e : m.row(i)) d.parts[e.peer].receives.push_back({i, e.bytes});
  }
}

void set_programs(ExchangePlanData& d, const CommMatrix& m, Schedule s, Contention contention) {
  std::vector<ProcessPlan> plans = make_process_plans(s, m, contention);
  for (Rank r = 0; r < m.size(); ++r) d.parts[r].program = std::move(plans[r]);
  d.phases = s.phases.size();
  d.schedule = std::move(s);
}

Schedule timed_schedule(ExchangePlanData& d, const CommMatrix& m) {
  const auto t0 = Clock::now();
  Schedule s = make_schedule(d.options.scheduler, m, ScheduleOptions{d.options.seed, d.options.max_phases});
  d.schedule_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  validate(s, m);
  return s;
}

}  // namespace

ExchangePlan::ExchangePlan(const CommMatrix& m, ExchangePlanOptions options) {
  const auto t0 = Clock::now();
  options = resolve_auto(m, std::move(options));
  const double choosing_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  data_ = new_data(options, scheme_of(options.scheduler), m.size(), m.size());
  ExchangePlanData& d = *data_;
  set_entries(d, m);
  if (d.scheme == Scheme::phased) set_programs(d, m, timed_schedule(d, m), Contention::forbidden);
  if (d.options.chosen_by_auto) d.schedule_ms += choosing_ms;
}

ExchangePlan ExchangePlan::from_schedule(const CommMatrix& m, Schedule schedule, ExchangePlanOptions options) {
  validate(schedule, m, Contention::allowed);
  options.scheduler = schedule.scheduler;
  auto data = new_data(std::move(options), Scheme::phased, m.size(), m.size());
  set_entries(*data, m);
  set_programs(*data, m, std::move(schedule), Contention::allowed);
  return ExchangePlan(std::move(data));
}

ExchangePlan::ExchangePlan(std::unique_ptr<ExchangePlanData> data) : data_(std::move(data)) {}
ExchangePlan::~ExchangePlan() = default;
ExchangePlan::ExchangePlan(ExchangePlan&&) noexcept = default;
ExchangePlan& ExchangePlan::operator=(ExchangePlan&&) noexcept = default;

Rank ExchangePlan::processes() const noexcept { return data_->processes; }
const ExchangePlanOptions& ExchangePlan::options() const noexcept { return data_->options; }
bool ExchangePlan::is_static() const noexcept { return data_->scheme == Scheme::phased; }
const Schedule* ExchangePlan::schedule() const noexcept { return data_->schedule ? &*data_->schedule : nullptr; }
std::uint64_t ExchangePlan::phases() const noexcept { return data_->phases; }
double ExchangePlan::schedule_ms() const noexcept { return data_->schedule_ms; }

namespace {

const ExchangePart& part_of(const ExchangePlanData& d, Rank r) {
  if (d.owner) {
    if (r != *d.owner) {
      throw InvalidArgument("switchyard: ExchangePlan: this plan was made by create() on rank " +
                            std::to_string(*d.owner) + " and holds only that member's part, not rank " +
                            std::to_string(r) + "'s");
    }
    return d.parts.front();
  }
  if (r >= d.processes) {
    throw InvalidArgument("switchyard: ExchangePlan: rank " + std::to_string(r) + " is not one of the plan's " +
                          std::to_string(d.processes) + " processes");
  }
  return d.parts[r];
}

}  // namespace

std::span<const MatrixEntry> ExchangePlan::sends(Rank r) const { return part_of(*data_, r).sends; }
std::span<const MatrixEntry> ExchangePlan::receives(Rank r) const { return part_of(*data_, r).receives; }

// --- create() ---

namespace {

// A member's program on the wire, from rank 0: this header, then its steps.
struct ProgramHeader {
  std::uint64_t phases = 0;
  double schedule_ms = 0;
  std::uint64_t steps = 0;
};
static_assert(std::is_trivially_copyable_v<PlanStep>, "programs travel as bytes");
constexpr Tag kProgramTag = 0;  // alone on the plan's library duplicate

std::vector<std::byte> encode_program(const ProcessPlan& plan, std::uint64_t phases, double schedule_ms) {
  const ProgramHeader h{phases, schedule_ms, plan.steps.size()};
  std::vector<std::byte> out(sizeof h + plan.steps.size() * sizeof(PlanStep));
  std::memcpy(out.data(), &h, sizeof h);
  if (!plan.steps.empty()) std::memcpy(out.data() + sizeof h, plan.steps.data(), plan.steps.size() * sizeof(PlanStep));
  return out;
}

void decode_program(std::span<const std::byte> in, Rank me, ExchangePlanData& d) {
  ProgramHeader h;
  if (in.size() >= sizeof h) std::memcpy(&h, in.data(), sizeof h);
  if (in.size() < sizeof h || in.size() != sizeof h + h.steps * sizeof(PlanStep)) {
    throw Error("switchyard: ExchangePlan::create on rank " + std::to_string(me) + ": a program of " +
                std::to_string(in.size()) + " bytes from rank 0 is malformed");
  }
  ProcessPlan& program = d.parts.front().program;
  program.rank = me;
  program.steps.resize(h.steps);
  if (h.steps) std::memcpy(program.steps.data(), in.data() + sizeof h, h.steps * sizeof(PlanStep));
  d.phases = h.phases;
  d.schedule_ms = h.schedule_ms;
}

// Rank 0's share of create(): the schedule of the gathered matrix, its own
// program, and every other member's program on the wire (index 0 unused).
std::vector<std::vector<std::byte>> schedule_programs(const CommMatrix& m, ExchangePlanData& d) {
  const Schedule s = timed_schedule(d, m);
  d.phases = s.phases.size();
  std::vector<ProcessPlan> plans = make_process_plans(s, m);
  std::vector<std::vector<std::byte>> wire(d.processes);
  for (Rank r = 1; r < d.processes; ++r) wire[r] = encode_program(plans[r], d.phases, d.schedule_ms);
  d.parts.front().program = std::move(plans.front());
  return wire;
}

Task<void> gather_and_distribute(Communicator comm, ExchangePlanData& d) {
  const Communicator lib = comm.library(kExchangePlanLibrary);
  ExchangePart& mine = d.parts.front();
  detail::GatheredRows rows = co_await detail::gather_rows(lib, mine.sends, "ExchangePlan::create", true);
  mine.receives = std::move(rows.column);
  if (comm.rank() != 0) {
    const Message program = co_await lib.recv(0, kProgramTag);
    decode_program(program.bytes(), comm.rank(), d);
    co_return;
  }
  const std::vector<std::vector<std::byte>> wire = schedule_programs(*rows.matrix, d);
  std::vector<SendTicket> sent;
  sent.reserve(wire.size());
  for (Rank r = 1; r < d.processes; ++r) sent.push_back(lib.post_send(r, wire[r], kProgramTag));
  co_await comm.process().wait_all(sent);
}

// "auto" in create(): every member's rows to every member, rank 0 chooses for
// the whole matrix and sends the others its choice.
Task<ExchangePlanOptions> choose_together(Communicator comm, std::span<const MatrixEntry> sends,
                                          ExchangePlanOptions options) {
  const Communicator lib = comm.library(kExchangePlanLibrary);
  const detail::GatheredRows rows = co_await detail::gather_rows(lib, sends, "ExchangePlan::create", true);
  std::vector<std::byte> chosen;
  if (comm.rank() == 0) {
    const std::string name = resolve_auto(*rows.matrix, options).scheduler;
    chosen.resize(name.size());
    std::memcpy(chosen.data(), name.data(), name.size());
  }
  chosen = co_await lib.broadcast(0, chosen);
  options.scheduler.assign(reinterpret_cast<const char*>(chosen.data()), chosen.size());
  options.chosen_by_auto = true;
  co_return options;
}

}  // namespace

Task<ExchangePlan> ExchangePlan::create(const Communicator& comm, std::span<const MatrixEntry> sends,
                                        ExchangePlanOptions options) {
  return create_on(comm, sends, std::move(options));
}

Task<ExchangePlan> ExchangePlan::create_on(Communicator comm, std::span<const MatrixEntry> sends,
                                           ExchangePlanOptions options) {
  if (options.scheduler == kAutoScheduler) options = co_await choose_together(comm, sends, std::move(options));
  // Every member refuses an unknown scheduler before any communication.
  const Scheme scheme = scheme_of(options.scheduler);
  std::unique_ptr<ExchangePlanData> d = new_data(std::move(options), scheme, comm.size(), 1);
  d->owner = comm.rank();
  ExchangePart& mine = d->parts.front();
  mine.sends.assign(sends.begin(), sends.end());
  if (d->scheme == Scheme::phased) {
    co_await gather_and_distribute(comm, *d);
  } else if (d->options.generate_recv) {
    mine.receives = co_await d->options.generate_recv->run(comm, mine.sends);
  } else {
    mine.receives = co_await generate_recv_concat(comm, mine.sends);
  }
  co_return ExchangePlan(std::move(d));
}

// --- run() ---

namespace {

// The part comm.rank() runs, or nullptr for a member beyond a plan that
// allows larger communicators. Throws for a communicator the plan is not for.
const ExchangePart* part_for_run(const ExchangePlanData& d, const Communicator& comm) {
  const Rank size = comm.size(), me = comm.rank();
  const bool larger_allowed = d.options.allow_larger_communicator && !d.owner;
  if (size != d.processes && !(larger_allowed && size > d.processes)) {
    throw InvalidArgument("switchyard: ExchangePlan::run on rank " + std::to_string(me) + ": the communicator has " +
                          std::to_string(size) + " members, the plan is for " + std::to_string(d.processes) +
                          " processes");
  }
  if (d.owner && me != *d.owner) {
    throw InvalidArgument("switchyard: ExchangePlan::run on rank " + std::to_string(me) +
                          ": the plan was made by create() on rank " + std::to_string(*d.owner) +
                          " and holds only that member's part");
  }
  if (me >= d.processes) return nullptr;
  return &d.parts[d.owner ? 0 : me];
}

Task<ExchangeRunStats> run_part(const ExchangePlanData& d, Communicator comm, ExchangeHooks& hooks) {
  const ExchangePart* part = part_for_run(d, comm);
  if (!part) co_return ExchangeRunStats{};
  detail::check_buffer_sizes("ExchangePlan::run", comm.rank(), part->sends, part->receives, hooks);
  const Communicator lib = comm.library(kExchangePlanLibrary);
  ExchangeRunStats stats;
  if (d.scheme == Scheme::phased) {
    co_await execute(lib, part->program, part->sends, part->receives, hooks);
  } else if (d.scheme == Scheme::ac) {
    co_await execute_ac(lib, part->sends, part->receives, hooks, d.options.ac);
  } else {
    const std::size_t index = static_cast<std::size_t>(part - d.parts.data());
    const std::uint64_t run = d.run_counts[index].runs.fetch_add(1, std::memory_order_relaxed);
    const DrsnOptions drsn{detail::stream_seed(d.options.seed, run), d.options.drsn_retry_yields,
                           d.options.drsn_monitor};
    const DrsnStats s = co_await execute_drsn(lib, part->sends, part->receives, hooks, drsn);
    stats.busy_lock_inquiries = s.inquiries;
  }
  co_return stats;
}

class SpanHooks final : public ExchangeHooks {
 public:
  SpanHooks(std::span<const std::span<const std::byte>> send, std::span<const std::span<std::byte>> recv) noexcept
      : send_(send), recv_(recv) {}
  std::span<const std::byte> send_buffer(std::size_t i) override { return send_[i]; }
  std::span<std::byte> recv_buffer(std::size_t i) override { return recv_[i]; }

 private:
  std::span<const std::span<const std::byte>> send_;
  std::span<const std::span<std::byte>> recv_;
};

void check_span_counts(Rank me, const ExchangePart& part, std::size_t sends, std::size_t recvs) {
  if (sends != part.sends.size() || recvs != part.receives.size()) {
    throw InvalidArgument("switchyard: ExchangePlan::run on rank " + std::to_string(me) + ": given " +
                          std::to_string(sends) + " send and " + std::to_string(recvs) +
                          " receive buffers, the plan has " + std::to_string(part.sends.size()) + " send and " +
                          std::to_string(part.receives.size()) + " receive entries");
  }
}

Task<ExchangeRunStats> run_spans(const ExchangePlanData& d, Communicator comm,
                                 std::span<const std::span<const std::byte>> send,
                                 std::span<const std::span<std::byte>> recv) {
  if (const ExchangePart* part = part_for_run(d, comm)) check_span_counts(comm.rank(), *part, send.size(), recv.size());
  SpanHooks hooks(send, recv);
  co_return co_await run_part(d, comm, hooks);
}

// The Alltoallv form: message q of each side at its displacement[q].
class DisplacedHooks final : public ExchangeHooks {
 public:
  DisplacedHooks(const ExchangePart& part, std::span<const std::byte> send, std::span<const std::uint64_t> send_at,
                 std::span<std::byte> recv, std::span<const std::uint64_t> recv_at) noexcept
      : part_(part), send_(send), send_at_(send_at), recv_(recv), recv_at_(recv_at) {}
  std::span<const std::byte> send_buffer(std::size_t i) override {
    const MatrixEntry& e = part_.sends[i];
    return send_.subspan(static_cast<std::size_t>(send_at_[e.peer]), static_cast<std::size_t>(e.bytes));
  }
  std::span<std::byte> recv_buffer(std::size_t i) override {
    const MatrixEntry& e = part_.receives[i];
    return recv_.subspan(static_cast<std::size_t>(recv_at_[e.peer]), static_cast<std::size_t>(e.bytes));
  }

 private:
  const ExchangePart& part_;
  std::span<const std::byte> send_;
  std::span<const std::uint64_t> send_at_;
  std::span<std::byte> recv_;
  std::span<const std::uint64_t> recv_at_;
};

[[noreturn, gnu::cold]] void bad_displacements(Rank me, Rank size, const char* side, std::size_t count) {
  throw InvalidArgument("switchyard: ExchangePlan::run on rank " + std::to_string(me) + ": " + side +
                        " displacements have " + std::to_string(count) + " entries, the communicator " +
                        std::to_string(size) + " ranks");
}

[[noreturn, gnu::cold]] void past_the_end(Rank me, const char* side, const char* direction, std::size_t i,
                                          const MatrixEntry& e, std::uint64_t start, std::size_t buffer) {
  throw InvalidArgument("switchyard: ExchangePlan::run on rank " + std::to_string(me) + ": " + side +
                        " buffer for entry " + std::to_string(i) + " (" + direction + " rank " +
                        std::to_string(e.peer) + "): " + std::to_string(e.bytes) + " bytes at displacement " +
                        std::to_string(start) + " run past its end at " + std::to_string(buffer) + " bytes");
}

void check_displacements(Rank me, Rank size, const char* side, const char* direction,
                         std::span<const MatrixEntry> entries, std::size_t buffer, std::span<const std::uint64_t> at) {
  if (at.size() != size) bad_displacements(me, size, side, at.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::uint64_t start = at[entries[i].peer];
    if (start > buffer || entries[i].bytes > buffer - start) past_the_end(me, side, direction, i, entries[i], start, buffer);
  }
}

Task<ExchangeRunStats> run_displaced(const ExchangePlanData& d, Communicator comm, std::span<const std::byte> send,
                                     std::span<const std::uint64_t> send_at, std::span<std::byte> recv,
                                     std::span<const std::uint64_t> recv_at) {
  const ExchangePart* part = part_for_run(d, comm);
  if (!part) co_return ExchangeRunStats{};
  check_displacements(comm.rank(), comm.size(), "send", "to", part->sends, send.size(), send_at);
  check_displacements(comm.rank(), comm.size(), "receive", "from", part->receives, recv.size(), recv_at);
  DisplacedHooks hooks(*part, send, send_at, recv, recv_at);
  co_return co_await run_part(d, comm, hooks);
}

}  // namespace

// The public calls copy the communicator into the coroutine's frame: a
// caller's temporary (a Process converted on the way in) may be gone by the
// time the task is awaited.
Task<ExchangeRunStats> ExchangePlan::run(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                                         std::span<const std::span<std::byte>> recv) const {
  return run_spans(*data_, comm, send, recv);
}

Task<ExchangeRunStats> ExchangePlan::run(const Communicator& comm, std::span<const std::byte> send_buffer,
                                         std::span<const std::uint64_t> send_displacements,
                                         std::span<std::byte> recv_buffer,
                                         std::span<const std::uint64_t> recv_displacements) const {
  return run_displaced(*data_, comm, send_buffer, send_displacements, recv_buffer, recv_displacements);
}

Task<ExchangeRunStats> ExchangePlan::run(const Communicator& comm, ExchangeHooks& hooks) const {
  return run_part(*data_, comm, hooks);
}

}  // namespace switchyard::schedulers
