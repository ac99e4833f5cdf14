#include "switchyard/schedulers/exchange_plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "copy_steps.hpp"
#include "described_memory.hpp"
#include "gathered_rows.hpp"
#include "hooks_support.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/model/machine_file.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/exchange.hpp"
#include "switchyard/schedulers/executor.hpp"
#include "switchyard/schedulers/generate_recv.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::schedulers {

namespace detail {

enum class Scheme : std::uint8_t { phased, ac, drsn };

// One member's side of a plan: its messages, for phased plans its program,
// and the steps of a compiled run.
struct ExchangePart {
  Rank rank = 0;  // the member whose part it is
  std::vector<MatrixEntry> sends, receives;
  ProcessPlan program;
  MemberSteps steps;
  CopyMember member;  // spans into `steps`, which never move once set
  void set_steps(MemberSteps s) {
    steps = std::move(s);
    member = CopyMember{steps.incoming, steps.outgoing};
  }
};

// Where a compiled run of the displacement or hook form lists its buffers:
// its part's scratch, which one run at a time takes (`busy`: acquire by the
// exchange that takes it, release when the run gives it back, so the next
// run, on any core, sees it as left); a run that finds it taken (the same
// rank running the plan on two communicators at once) makes its own.
struct alignas(kCacheLine) RegionScratch {
  std::atomic<bool> busy{false};
  std::vector<std::span<const std::byte>> send;
  std::vector<std::span<std::byte>> recv;
};
static_assert(kOwnsCacheLines<RegionScratch>, "shared across cores: cache lines of its own");

// A member's count of its runs, from which DRS_N's order stream of each run
// derives. Atomic: two processes of one rank may run the plan at once, on two
// communicators of the same size. A cache line each: members on different
// cores count at the same time.
struct alignas(kCacheLine) RunCount {
  std::atomic<std::uint64_t> runs{0};
};
static_assert(kOwnsCacheLines<RunCount>, "shared across cores: cache lines of its own");

// A member's split run between its start and its wait (ExchangePlan::start):
// touched by that member's process alone. `send` and `recv` are the regions
// of a run on described memory, which its slot points to until it completes.
struct alignas(kCacheLine) SplitRun {
  std::optional<ExchangeRun> run;  // started, not yet handed to a wait
  Communicator comm;  // the starter's, for a plan destroyed meanwhile
  std::span<const std::byte> send[1];
  std::span<std::byte> recv[1];
};
static_assert(kOwnsCacheLines<SplitRun>, "shared across cores: cache lines of its own");

struct ExchangePlanData {
  ExchangePlanOptions options;
  Scheme scheme = Scheme::phased;
  Rank processes = 0;
  std::optional<Schedule> schedule;  // phased plans from the whole pattern
  std::uint64_t phases = 0;
  double schedule_ms = 0;
  std::optional<Rank> owner;  // create(): the member whose part `parts` holds
  std::vector<ExchangePart> parts;  // by rank; create(): the owner's alone
  std::unique_ptr<RunCount[]> run_counts;  // one per part
  std::unique_ptr<RegionScratch[]> scratch;  // one per part
  std::unique_ptr<SplitRun[]> split;  // one per part
  // A compiled run's exchange key (run_copy_exchange): how each is agreed
  // across nodes is at local_copy_key() and shared_copy_key().
  std::uint64_t copy_key = 0;
  CopyExchangeOptions copy_options;  // set once the plan is made (set_copy_options)
  // The cores' programs of the compiled runs, kept from job to job: those of
  // copy_key, and those of the described memory's key (with its options).
  std::shared_ptr<CopyProgramCache> copy_programs = make_copy_program_cache();
  std::shared_ptr<CopyProgramCache> described_programs = make_copy_program_cache();
  CopyExchangeOptions described_copy_options;
  std::optional<model::MachineFile> machine;  // options.machine's copy
  // Plans from the whole pattern: the direct copies of hooks that describe memory.
  std::unique_ptr<DescribedMemory> described;
};

}  // namespace detail

namespace {

using detail::ExchangePart;
using detail::ExchangePlanData;
using detail::Scheme;
using Clock = std::chrono::steady_clock;

// Compiled-exchange keys. run_copy_exchange names an exchange's state on a
// communicator by its key, on each node apart, so a key must name one
// exchange on every node that runs it. A key is a count of this OS process
// in its low kCountBits, beside a node field above them:
//  - local_copy_key(), node field 0: the keys of a plan from the whole
//    pattern and of its DescribedMemory. Each node makes such a plan by
//    itself, and its key never leaves the node (the nodes' leaders pair an
//    exchange's staged messages by the order of the runs, not by key);
//  - shared_copy_key(), node field rank 0's node + 1: the key of a plan from
//    create(), made by its rank 0 and broadcast (agree_copy_key). No count of
//    another node can equal it, whatever number of plans each node has made,
//    nor a local key of any node, and its own node never repeats a count.
constexpr unsigned kCountBits = 40;

std::uint64_t next_count() {
  static std::atomic<std::uint64_t> next{1};  // only its own uniqueness matters: relaxed
  const std::uint64_t count = next.fetch_add(1, std::memory_order_relaxed);
  if (count >> kCountBits) throw Error("switchyard: ExchangePlan: more than 2^40 plans made in one OS process");
  return count;
}

std::uint64_t local_copy_key() { return next_count(); }

std::uint64_t shared_copy_key() {
  const std::uint64_t node = this_node();
  if (node >= (std::uint64_t{1} << (64 - kCountBits)) - 1) {
    throw Error("switchyard: ExchangePlan::create: node " + std::to_string(node) + " is beyond the plans' keys");
  }
  return (node + 1) << kCountBits | next_count();
}

// options with "auto" replaced by the scheduler it chooses for m.
ExchangePlanOptions resolve_auto(const CommMatrix& m, ExchangePlanOptions options) {
  if (options.scheduler != kAutoScheduler) return options;
  const model::MachineFile machine = options.machine ? *options.machine : model::default_machine_file();
  options.scheduler = choose_exchange_scheduler(m, machine, ScheduleOptions{options.seed, options.max_phases});
  options.chosen_by_auto = true;
  return options;
}

Scheme scheme_of(const SchedulerName& name) {
  if (const SchedulerDescriptor* d = find_scheduler(name.str())) {
    switch (d->online) {
      case OnlineScheme::ac:
        return Scheme::ac;
      case OnlineScheme::drsn:
        return Scheme::drsn;
      case OnlineScheme::none:
        return Scheme::phased;
    }
  }
  std::string known;
  for (const auto& k : default_exchange_schedulers()) known += (known.empty() ? "" : ", ") + k;
  throw InvalidArgument("switchyard: ExchangePlan: unknown scheduler '" + name + "' (known: " + known + ", " +
                        std::string(kAutoScheduler) + ")");
}

std::unique_ptr<ExchangePlanData> new_data(ExchangePlanOptions options, Scheme scheme, Rank processes,
                                           std::size_t parts) {
  auto d = std::make_unique<ExchangePlanData>();
  d->scheme = scheme;
  d->options = options;
  if (options.machine) {  // the plan's own copy: the caller's may go
    d->machine = *options.machine;
    d->options.machine = &*d->machine;
  }
  d->processes = processes;
  d->parts.resize(parts);
  d->run_counts = std::make_unique<detail::RunCount[]>(parts);
  d->scratch = std::make_unique<detail::RegionScratch[]>(parts);
  d->split = std::make_unique<detail::SplitRun[]>(parts);
  return d;
}

// A plan from the whole pattern: its node's own keys (local_copy_key()).
void set_local_keys(ExchangePlanData& d) {
  d.copy_key = local_copy_key();
  d.described = std::make_unique<detail::DescribedMemory>(d.processes, local_copy_key());
}

// Every process's row and column of m, and the steps of its whole messages
// (an online scheme's compiled run).
void set_entries(ExchangePlanData& d, const CommMatrix& m) {
  const std::vector<std::vector<std::uint32_t>> position = detail::column_positions(m);
  std::vector<std::vector<std::uint32_t>> at_sender(m.size());  // per column entry: its row entry at the sender
  for (Rank i = 0; i < m.size(); ++i) {
    d.parts[i].rank = i;
    d.parts[i].sends.assign(m.row(i).begin(), m.row(i).end());
    for (std::size_t k = 0; k < m.row(i).size(); ++k) {
      const MatrixEntry& e = m.row(i)[k];
      d.parts[e.peer].receives.push_back({i, e.bytes});
      at_sender[e.peer].push_back(static_cast<std::uint32_t>(k));
    }
  }
  if (d.scheme == Scheme::phased) return;  // set_programs() sets them, piece by piece
  for (Rank r = 0; r < m.size(); ++r) {
    ExchangePart& part = d.parts[r];
    part.set_steps(detail::steps_of_entries(r, part.sends, part.receives, position[r], at_sender[r]));
  }
}

void set_programs(ExchangePlanData& d, const CommMatrix& m, Schedule s, Contention contention) {
  std::vector<ProcessPlan> plans = make_process_plans(s, m, contention);
  for (Rank r = 0; r < m.size(); ++r) {
    d.parts[r].program = std::move(plans[r]);
    d.parts[r].set_steps(detail::steps_of_program(r, d.parts[r].program));
  }
  d.phases = s.phases.size();
  d.schedule = std::move(s);
}

// How the compiled runs of a finished plan copy (copy_exchange.hpp).
void set_copy_options(ExchangePlanData& d) {
  CopyExchangeOptions& o = d.copy_options;
  o.side = d.options.copy_side;
  o.seed = d.options.seed;
  switch (d.scheme) {
    case Scheme::ac:
      o.order = CopyOrder::any;
      break;
    case Scheme::phased:
      o.order = d.options.strict ? CopyOrder::strict_phases : CopyOrder::phases;
      break;
    case Scheme::drsn:
      o.order = CopyOrder::busy_locks;
      o.side = CopySide::sender;
      o.retry_yields = d.options.drsn_retry_yields;
      o.observer = d.options.drsn_monitor;
      break;
  }
  o.phases = static_cast<std::uint32_t>(d.phases);
  o.programs = d.copy_programs.get();
  d.described_copy_options = o;
  d.described_copy_options.programs = d.described_programs.get();
}

Schedule timed_schedule(ExchangePlanData& d, const CommMatrix& m) {
  const auto t0 = Clock::now();
  Schedule s = make_schedule(d.options.scheduler.str(), m, ScheduleOptions{d.options.seed, d.options.max_phases});
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
  set_local_keys(d);
  set_entries(d, m);
  if (d.scheme == Scheme::phased) set_programs(d, m, timed_schedule(d, m), Contention::forbidden);
  if (d.options.chosen_by_auto) d.schedule_ms += choosing_ms;
  set_copy_options(d);
}

ExchangePlan::ExchangePlan(const CommMatrix& m, SchedulerName scheduler)
    : ExchangePlan(m, ExchangePlanOptions{.scheduler = scheduler}) {}

ExchangePlan ExchangePlan::from_schedule(const CommMatrix& m, Schedule schedule, ExchangePlanOptions options) {
  validate(schedule, m, Contention::allowed);
  options.scheduler = schedule.scheduler;
  auto data = new_data(std::move(options), Scheme::phased, m.size(), m.size());
  set_local_keys(*data);
  set_entries(*data, m);
  set_programs(*data, m, std::move(schedule), Contention::allowed);
  set_copy_options(*data);
  return ExchangePlan(std::move(data));
}

ExchangePlan::ExchangePlan(std::unique_ptr<ExchangePlanData> data) : data_(std::move(data)) {}
// A plan destroyed with split runs in flight fails their jobs (CopyRun::abandon),
// its data kept until they end.
ExchangePlan::~ExchangePlan() {
  ExchangePlanData* const d = data_.get();  // data_ is moved into `keep` on the first run found
  if (!d) return;
  std::shared_ptr<const ExchangePlanData> keep;
  for (std::size_t k = 0; k < d->parts.size(); ++k) {
    detail::SplitRun& split = d->split[k];
    if (!split.run || !split.comm.valid()) continue;
    if (!keep) keep = std::shared_ptr<const ExchangePlanData>(std::move(data_));
    const std::string why = "switchyard: ExchangePlan (scheduler '" + keep->options.scheduler.str() + "', " +
                            std::to_string(keep->processes) + " processes) destroyed on rank " +
                            std::to_string(split.comm.rank()) + " (process " +
                            std::to_string(split.comm.process().rank()) +
                            " of the job) between the start of a split-phase run and its wait";
    split.run->abandon(split.comm, why, keep);
  }
}
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
  } else {
    const std::vector<std::vector<std::byte>> wire = schedule_programs(*rows.matrix, d);
    std::vector<SendTicket> sent;
    sent.reserve(wire.size());
    for (Rank r = 1; r < d.processes; ++r) sent.push_back(lib.post_send(r, wire[r], kProgramTag));
    co_await comm.process().wait_all(sent);
  }
  mine.set_steps(detail::steps_of_program(comm.rank(), mine.program));
}

// Four bytes per message, each an entry index, as ExchangeHooks.
class IndexHooks final : public ExchangeHooks {
 public:
  IndexHooks(std::span<const std::uint32_t> out, std::span<std::uint32_t> in) noexcept : out_(out), in_(in) {}
  std::span<const std::byte> send_buffer(std::size_t i) override { return std::as_bytes(out_.subspan(i, 1)); }
  std::span<std::byte> recv_buffer(std::size_t i) override { return std::as_writable_bytes(in_.subspan(i, 1)); }

 private:
  std::span<const std::uint32_t> out_;
  std::span<std::uint32_t> in_;
};

std::vector<MatrixEntry> index_messages(std::span<const MatrixEntry> entries) {
  std::vector<MatrixEntry> out(entries.begin(), entries.end());
  for (MatrixEntry& e : out) e.bytes = sizeof(std::uint32_t);
  return out;
}

// An online scheme's compiled steps need, for each message, its entry at the
// other end: every sender tells each receiver its row index, every receiver
// each sender its column index (two AC exchanges of four bytes a message).
Task<void> learn_peer_entries(Communicator lib, ExchangePart& mine) {
  const std::vector<MatrixEntry> sends = index_messages(mine.sends), receives = index_messages(mine.receives);
  std::vector<std::uint32_t> row(sends.size()), column(receives.size());
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<std::uint32_t>(i);
  for (std::size_t j = 0; j < column.size(); ++j) column[j] = static_cast<std::uint32_t>(j);
  std::vector<std::uint32_t> at_sender(receives.size()), at_receiver(sends.size());
  IndexHooks forward(row, at_sender), backward(column, at_receiver);
  co_await execute_ac(lib, sends, receives, forward);
  co_await execute_ac(lib, receives, sends, backward);
  mine.set_steps(detail::steps_of_entries(lib.rank(), mine.sends, mine.receives, at_receiver, at_sender));
}

// A member's sends by destination, each destination once.
void sort_sends(Rank me, std::vector<MatrixEntry>& sends) {
  std::stable_sort(sends.begin(), sends.end(),
                   [](const MatrixEntry& a, const MatrixEntry& b) { return a.peer < b.peer; });
  for (std::size_t k = 1; k < sends.size(); ++k) {
    if (sends[k - 1].peer == sends[k].peer) {
      throw InvalidArgument("switchyard: ExchangePlan::create on rank " + std::to_string(me) + ": destination " +
                            std::to_string(sends[k].peer) + " is listed twice");
    }
  }
}

// The key of a plan from create(): rank 0's shared_copy_key(), on every member.
Task<std::uint64_t> agree_copy_key(Communicator lib) {
  const std::uint64_t mine = lib.rank() == 0 ? shared_copy_key() : 0;
  const std::vector<std::byte> key =
      co_await lib.broadcast(0, std::as_bytes(std::span<const std::uint64_t, 1>(&mine, 1)));
  std::uint64_t agreed = 0;
  std::memcpy(&agreed, key.data(), sizeof agreed);
  co_return agreed;
}

// A member's options of create() in words: those that decide which
// collectives create() and its runs take.
std::string options_text(const ExchangePlanOptions& o) {
  return "scheduler '" + o.scheduler.str() + "', " +
         (o.execution == ExchangeExecution::copy ? "compiled" : "on messages") +
         (o.copy_side == CopySide::receiver ? ", pull" : ", push") + (o.strict ? ", strict" : "") + ", seed " +
         std::to_string(o.seed) + ", max_phases " + std::to_string(o.max_phases) +
         (o.generate_recv ? ", Generate_Recv by active messages" : "");
}

// The member of lib that first differs from rank 0 (`differs` on each), of
// `count` that do: each member learns its rank.
Task<Rank> first_differing(Communicator lib, bool differs, std::int64_t count, std::int64_t rank_sum) {
  if (count == 1) co_return static_cast<Rank>(rank_sum);
  const std::int64_t mine[1]{differs};
  const std::vector<std::int64_t> before = co_await lib.exclusive_scan(mine);
  const std::int64_t first[1]{differs && before[0] == 0 ? std::int64_t{lib.rank()} : 0};
  co_return static_cast<Rank>((co_await lib.allreduce(first))[0]);
}

// Every member of create() passes the same options, or every member throws,
// naming rank 0's and those of the first member that differs: members that
// part ways (another scheduler takes other collectives) would wait for each
// other until the stall timeout. Two collectives when they agree.
Task<void> agree_options(Communicator lib, const ExchangePlanOptions& options) {
  const std::string mine = options_text(options);
  const std::vector<std::byte> root = co_await lib.broadcast(0, std::as_bytes(std::span(mine)));
  const bool differs = std::string_view(reinterpret_cast<const char*>(root.data()), root.size()) != mine;
  const std::int64_t counts[2]{differs, differs ? std::int64_t{lib.rank()} : 0};
  const std::vector<std::int64_t> total = co_await lib.allreduce(counts);
  if (total[0] == 0) co_return;
  const Rank other = co_await first_differing(lib, differs, total[0], total[1]);
  const std::vector<std::byte> theirs = co_await lib.broadcast(other, std::as_bytes(std::span(mine)));
  throw InvalidArgument("switchyard: ExchangePlan::create on rank " + std::to_string(lib.rank()) +
                        ": the members pass different options: rank 0 " +
                        std::string(reinterpret_cast<const char*>(root.data()), root.size()) + "; rank " +
                        std::to_string(other) + " " +
                        std::string(reinterpret_cast<const char*>(theirs.data()), theirs.size()) + " (" +
                        std::to_string(total[0]) + " member(s) differ from rank 0)");
}

// "auto" in create(): every member's rows to every member, rank 0 chooses for
// the whole matrix and sends the others its choice.
Task<ExchangePlanOptions> choose_together(Communicator comm, std::span<const MatrixEntry> sends,
                                          ExchangePlanOptions options) {
  const Communicator lib = comm.library(kExchangePlanLibrary);
  const detail::GatheredRows rows = co_await detail::gather_rows(lib, sends, "ExchangePlan::create", true);
  std::vector<std::byte> chosen;
  if (comm.rank() == 0) {
    const SchedulerName name = resolve_auto(*rows.matrix, options).scheduler;
    chosen.resize(name.view().size());
    std::memcpy(chosen.data(), name.view().data(), chosen.size());
  }
  chosen = co_await lib.broadcast(0, chosen);
  options.scheduler = std::string_view(reinterpret_cast<const char*>(chosen.data()), chosen.size());
  options.chosen_by_auto = true;
  co_return options;
}

}  // namespace

Task<ExchangePlan> ExchangePlan::create(const Communicator& comm, std::span<const MatrixEntry> sends,
                                        ExchangePlanOptions options) {
  return create_on(comm, sends, options);
}

Task<ExchangePlan> ExchangePlan::create(const Communicator& comm, std::span<const MatrixEntry> sends,
                                        SchedulerName scheduler) {
  return create_on(comm, sends, ExchangePlanOptions{.scheduler = scheduler});
}

Task<ExchangePlan> ExchangePlan::create_on(Communicator comm, std::span<const MatrixEntry> sends,
                                           ExchangePlanOptions options) {
  co_await agree_options(comm.library(kExchangePlanLibrary), options);
  if (options.scheduler == kAutoScheduler) options = co_await choose_together(comm, sends, std::move(options));
  // Every member refuses an unknown scheduler before any communication.
  const Scheme scheme = scheme_of(options.scheduler);
  std::unique_ptr<ExchangePlanData> d = new_data(std::move(options), scheme, comm.size(), 1);
  d->owner = comm.rank();
  ExchangePart& mine = d->parts.front();
  mine.rank = comm.rank();
  mine.sends.assign(sends.begin(), sends.end());
  sort_sends(comm.rank(), mine.sends);
  if (d->scheme == Scheme::phased) {
    co_await gather_and_distribute(comm, *d);
  } else {
    if (d->options.generate_recv) {
      mine.receives = co_await d->options.generate_recv->run(comm, mine.sends);
    } else {
      mine.receives = co_await generate_recv_concat(comm, mine.sends);
    }
    if (d->options.execution == ExchangeExecution::copy) {
      co_await learn_peer_entries(comm.library(kExchangePlanLibrary), mine);
    }
  }
  const Communicator lib = comm.library(kExchangePlanLibrary);
  d->copy_key = co_await agree_copy_key(lib);
  set_copy_options(*d);
  if (d->options.execution == ExchangeExecution::copy) {
    co_await prepare_copy_exchange(lib, d->copy_key, d->processes, mine.member, d->copy_options);
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

// Whether a run is compiled (across nodes too: the runtime aggregates the
// messages between nodes per node pair) or goes on messages.
bool compiled(const ExchangePlanData& d, const Communicator&) { return d.options.execution == ExchangeExecution::copy; }

// The compiled run of `part` with its buffers in `regions`, on the plan's
// duplicate of comm: the runtime's own run, with no frame of the plan's around it.
ExchangeRun run_copies(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm,
                       CopyRegions regions, CopyRegionCheck check = {}) {
  return run_copy_exchange(comm.library(kExchangePlanLibrary), d.copy_key, d.processes, part.member, regions,
                           d.copy_options, check);
}

// The span form's buffer sizes against the part's entries: made by the
// compiled run only when the spans differ from the member's last run's
// (CopyRegionCheck), so a run on the same buffers again checks nothing.
void check_part_sizes(const void* part, const CopyRegions& regions) {
  const auto& p = *static_cast<const ExchangePart*>(part);
  detail::check_buffer_sizes("ExchangePlan::run", p.rank, p.sends, p.receives, regions.send, regions.recv);
}

// The buffer lists of a compiled run of the displacement or hook form: the
// part's scratch, or lists of its own when another run holds it.
class RunRegions {
 public:
  RunRegions(detail::RegionScratch& scratch, const ExchangePart& part)
      : claimed_(scratch.busy.exchange(true, std::memory_order_acquire) ? nullptr : &scratch),
        send_(claimed_ ? claimed_->send : own_send_),
        recv_(claimed_ ? claimed_->recv : own_recv_) {
    send_.resize(part.sends.size());  // sized on the first run, kept after
    recv_.resize(part.receives.size());
  }
  ~RunRegions() {
    if (claimed_) claimed_->busy.store(false, std::memory_order_release);
  }
  RunRegions(const RunRegions&) = delete;
  RunRegions& operator=(const RunRegions&) = delete;
  std::span<std::span<const std::byte>> send() noexcept { return send_; }
  std::span<std::span<std::byte>> recv() noexcept { return recv_; }
  CopyRegions regions() const noexcept { return CopyRegions{send_, recv_}; }

 private:
  detail::RegionScratch* claimed_;
  std::vector<std::span<const std::byte>> own_send_;
  std::vector<std::span<std::byte>> own_recv_;
  std::vector<std::span<const std::byte>>& send_;
  std::vector<std::span<std::byte>>& recv_;
};

std::size_t part_index(const ExchangePlanData& d, const ExchangePart& part) {
  return static_cast<std::size_t>(&part - d.parts.data());
}

// The direct run of hooks that describe memory, once me's steps are compiled.
ExchangeRun run_described(const ExchangePlanData& d, const Communicator& comm, const CopyMember& direct,
                          CopyRegions regions) {
  return run_copy_exchange(comm.library(kExchangePlanLibrary), d.described->copy_key(), d.processes, direct, regions,
                           d.described_copy_options);
}

// Whether a compiled run of these hooks copies straight between the members' described memory.
bool runs_described(const ExchangePlanData& d, const Communicator& comm, ExchangeHooks& hooks) {
  return d.described && hooks.describes_memory() && comm.nodes() == 1;
}

// A compiled run of the hook form: every message made ready, the copies,
// every message handed over; or, for hooks that describe memory in a plan
// from the whole pattern, the copies straight from the senders' memory into
// the receivers' (described_memory.hpp), each member publishing its two
// regions. Only on one node: the members pair their blocks in the plan's
// memory, which a member on another node does not share.
Task<ExchangeRunStats> run_hooks_copied(const ExchangePlanData& d, const ExchangePart& part, Communicator comm,
                                        ExchangeHooks& hooks) {
  if (runs_described(d, comm, hooks)) {
    const CopyMember* direct = d.described->compiled(comm.rank());
    if (!direct)
      direct = co_await d.described->compile(comm.process(), comm.rank(), part.sends, part.receives, part.steps, hooks);
    const ExchangeMemory memory = d.described->memory(comm.rank(), hooks);
    const std::span<const std::byte> send[]{memory.send};
    const std::span<std::byte> recv[]{memory.recv};
    co_return co_await run_described(d, comm, *direct, CopyRegions{send, recv});
  }
  RunRegions regions(d.scratch[part_index(d, part)], part);
  detail::check_buffer_sizes("ExchangePlan::run", comm.rank(), part.sends, part.receives, hooks, regions.send(),
                             regions.recv());
  for (std::size_t i = 0; i < part.sends.size(); ++i) hooks.before_send(i);
  const ExchangeRunStats stats = co_await run_copies(d, part, comm, regions.regions());
  for (std::size_t j = 0; j < part.receives.size(); ++j) hooks.after_receive(j);
  co_return stats;
}

Task<ExchangeRunStats> run_part(const ExchangePlanData& d, Communicator comm, ExchangeHooks& hooks) {
  const ExchangePart* part = part_for_run(d, comm);
  if (!part) co_return ExchangeRunStats{};
  if (compiled(d, comm)) co_return co_await run_hooks_copied(d, *part, comm, hooks);
  detail::check_buffer_sizes("ExchangePlan::run", comm.rank(), part->sends, part->receives, hooks);
  const Communicator lib = comm.library(kExchangePlanLibrary);
  ExchangeRunStats stats;
  if (d.scheme == Scheme::phased) {
    co_await execute(lib, part->program, part->sends, part->receives, hooks);
  } else if (d.scheme == Scheme::ac) {
    co_await execute_ac(lib, part->sends, part->receives, hooks, d.options.ac);
  } else {
    const std::uint64_t run = d.run_counts[part_index(d, *part)].runs.fetch_add(1, std::memory_order_relaxed);
    const DrsnOptions drsn{stream_seed(d.options.seed, run), d.options.drsn_retry_yields, d.options.drsn_monitor};
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

[[noreturn, gnu::cold, gnu::noinline]] void wrong_span_counts(Rank me, const ExchangePart& part, std::size_t sends,
                                                              std::size_t recvs) {
  throw InvalidArgument("switchyard: ExchangePlan::run on rank " + std::to_string(me) + ": given " +
                        std::to_string(sends) + " send and " + std::to_string(recvs) +
                        " receive buffers, the plan has " + std::to_string(part.sends.size()) + " send and " +
                        std::to_string(part.receives.size()) + " receive entries");
}

// Two compares inline on every run; the message built out of line.
void check_span_counts(Rank me, const ExchangePart& part, std::size_t sends, std::size_t recvs) {
  if (sends != part.sends.size() || recvs != part.receives.size()) [[unlikely]]
    wrong_span_counts(me, part, sends, recvs);
}

Task<ExchangeRunStats> run_span_messages(const ExchangePlanData& d, Communicator comm,
                                         std::span<const std::span<const std::byte>> send,
                                         std::span<const std::span<std::byte>> recv) {
  SpanHooks hooks(send, recv);
  co_return co_await run_part(d, comm, hooks);
}

Task<ExchangeRunStats> no_run() { co_return ExchangeRunStats{}; }

// Not a coroutine: the counts' check throws at the call, and a compiled run
// is the runtime's run alone (no frame for the awaiting process), which checks
// the sizes of buffers that are not the last run's before it publishes them.
ExchangeRun run_spans(const ExchangePlanData& d, const Communicator& comm,
                      std::span<const std::span<const std::byte>> send, std::span<const std::span<std::byte>> recv) {
  const ExchangePart* part = part_for_run(d, comm);
  if (!part) return ExchangeRun(no_run());
  check_span_counts(comm.rank(), *part, send.size(), recv.size());
  if (!compiled(d, comm)) return ExchangeRun(run_span_messages(d, comm, send, recv));
  return run_copies(d, *part, comm, CopyRegions{send, recv}, CopyRegionCheck{&check_part_sizes, part});
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
    if (start > buffer || entries[i].bytes > buffer - start)
      past_the_end(me, side, direction, i, entries[i], start, buffer);
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
  if (!compiled(d, comm)) co_return co_await run_part(d, comm, hooks);
  RunRegions regions(d.scratch[part_index(d, *part)], *part);
  for (std::size_t i = 0; i < part->sends.size(); ++i) regions.send()[i] = hooks.send_buffer(i);
  for (std::size_t j = 0; j < part->receives.size(); ++j) regions.recv()[j] = hooks.recv_buffer(j);
  co_return co_await run_copies(d, *part, comm, regions.regions());
}

// Split phase: me's slot for a start, refusing (as `call`) a second start before the wait.
detail::SplitRun& split_to_start(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm,
                                 const char* call = "ExchangePlan::start") {
  detail::SplitRun& split = d.split[part_index(d, part)];
  if (split.run && !split.comm.valid()) split.run.reset();  // a job that failed in between: over
  if (split.run) {
    split.run->refuse_while_started(std::string("switchyard: ") + call + " on rank " + std::to_string(comm.rank()) +
                                    ": a second start before the wait of the first (each start is followed by one "
                                    "wait)");
  }
  return split;
}

// Starts `run`, recorded in `split` until its wait; nothing recorded if it throws.
void start_split(detail::SplitRun& split, const Communicator& comm, ExchangeRun run) {
  split.run.emplace(std::move(run));
  split.comm = comm;
  try {
    split.run->start();
  } catch (...) {
    split.run.reset();
    throw;
  }
}

}  // namespace

void ExchangePlan::start(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                         std::span<const std::span<std::byte>> recv) const {
  const ExchangePart* part = part_for_run(*data_, comm);
  if (!part) return;
  detail::SplitRun& split = split_to_start(*data_, *part, comm);
  start_split(split, comm, run_spans(*data_, comm, send, recv));
}

void ExchangePlan::start(const Communicator& comm, std::span<const std::byte> send_buffer,
                         std::span<const std::uint64_t> send_displacements, std::span<std::byte> recv_buffer,
                         std::span<const std::uint64_t> recv_displacements) const {
  const ExchangePart* part = part_for_run(*data_, comm);
  if (!part) return;
  detail::SplitRun& split = split_to_start(*data_, *part, comm);
  start_split(split, comm, run(comm, send_buffer, send_displacements, recv_buffer, recv_displacements));
}

void ExchangePlan::start(const Communicator& comm, ExchangeHooks& hooks) const {
  const ExchangePlanData& d = *data_;
  const ExchangePart* part = part_for_run(d, comm);
  if (!part) return;
  detail::SplitRun& split = split_to_start(d, *part, comm);
  const CopyMember* direct =
      compiled(d, comm) && runs_described(d, comm, hooks) ? d.described->compiled(comm.rank()) : nullptr;
  if (!direct) return start_split(split, comm, run(comm, hooks));  // recorded: it runs in the wait
  const ExchangeMemory memory = d.described->memory(comm.rank(), hooks);
  split.send[0] = memory.send;
  split.recv[0] = memory.recv;
  start_split(split, comm, run_described(d, comm, *direct, CopyRegions{split.send, split.recv}));
}

void ExchangePlan::refuse_second_start(const Communicator& comm, const char* call) const {
  if (const ExchangePart* part = part_for_run(*data_, comm)) (void)split_to_start(*data_, *part, comm, call);
}

ExchangeRun ExchangePlan::wait(const Communicator& comm) const {
  const ExchangePart* part = part_for_run(*data_, comm);
  if (!part) return ExchangeRun(no_run());
  detail::SplitRun& split = data_->split[part_index(*data_, *part)];
  if (split.run && !split.comm.valid()) split.run.reset();  // a job that failed in between: over
  if (!split.run) {
    throw InvalidArgument("switchyard: ExchangePlan::wait on rank " + std::to_string(comm.rank()) +
                          ": no start to wait for (a wait follows a start of the same process)");
  }
  ExchangeRun run = std::move(*split.run);
  split.run.reset();
  return run;
}

// The public calls copy the communicator into the coroutine's frame (or, for
// a compiled run, take its library duplicate at once): a caller's temporary (a
// Process converted on the way in) may be gone by the time the task is awaited.
ExchangeRun ExchangePlan::run(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                              std::span<const std::span<std::byte>> recv) const {
  return run_spans(*data_, comm, send, recv);
}

ExchangeRun ExchangePlan::run(const Communicator& comm, std::span<const std::byte> send_buffer,
                              std::span<const std::uint64_t> send_displacements, std::span<std::byte> recv_buffer,
                              std::span<const std::uint64_t> recv_displacements) const {
  return ExchangeRun(run_displaced(*data_, comm, send_buffer, send_displacements, recv_buffer, recv_displacements));
}

ExchangeRun ExchangePlan::run(const Communicator& comm, ExchangeHooks& hooks) const {
  return ExchangeRun(run_part(*data_, comm, hooks));
}

BoundExchange ExchangePlan::bind(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                                 std::span<const std::span<std::byte>> recv) const {
  const ExchangePlanData& d = *data_;
  BoundExchange b;
  b.plan_ = &d;
  b.comm_ = comm;
  const ExchangePart* part = part_for_run(d, comm);
  if (!part) return b;  // a member beyond the plan: its runs do nothing
  check_span_counts(comm.rank(), *part, send.size(), recv.size());
  detail::check_buffer_sizes("ExchangePlan::bind", part->rank, part->sends, part->receives, send, recv);
  std::vector<std::span<const std::byte>> sends(send.begin(), send.end());
  std::vector<std::span<std::byte>> receives(recv.begin(), recv.end());
  if (compiled(d, comm)) {
    b.copies_ = CopyBinding(comm.library(kExchangePlanLibrary), d.copy_key, d.processes, part->member, std::move(sends),
                            std::move(receives), d.copy_options);
  } else {
    b.send_ = std::move(sends);
    b.recv_ = std::move(receives);
  }
  return b;
}

BoundExchange::BoundExchange(BoundExchange&& other) noexcept { *this = std::move(other); }

BoundExchange& BoundExchange::operator=(BoundExchange&& other) noexcept {
  if (this == &other) return *this;
  copies_ = std::move(other.copies_);
  plan_ = std::exchange(other.plan_, nullptr);
  comm_ = other.comm_;
  send_ = std::move(other.send_);
  recv_ = std::move(other.recv_);
  return *this;
}

ExchangeRun BoundExchange::run() {
  if (copies_.bound()) return copies_.run();
  if (!plan_)
    throw InvalidArgument("switchyard: BoundExchange::run: the binding is empty (default-made or moved from)");
  return run_spans(*plan_, comm_, send_, recv_);
}

}  // namespace switchyard::schedulers
