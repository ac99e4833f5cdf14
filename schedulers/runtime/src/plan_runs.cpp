#include "plan_runs.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hooks_support.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/schedulers/executor.hpp"
#include "switchyard/schedulers/online.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::schedulers::detail {

namespace {

// The compiled run of `part` with its buffers in `regions`, on the plan's
// duplicate of comm: the runtime's own run, with no frame of the plan's around it.
ExchangeRun run_copies(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm,
                       CompiledRegions regions, CompiledRegionCheck check = {}) {
  return run_compiled_exchange(comm.library(kExchangePlanLibrary), d.compiled_key, d.processes, part.member, regions,
                               d.compiled_options, check);
}

// The span form's buffer sizes against the part's entries: made by the
// compiled run only when the spans differ from the member's last run's
// (CompiledRegionCheck), so a run on the same buffers again checks nothing.
void check_part_sizes(const void* part, const CompiledRegions& regions) {
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
  CompiledRegions regions() const noexcept { return CompiledRegions{send_, recv_}; }

 private:
  detail::RegionScratch* claimed_;
  std::vector<std::span<const std::byte>> own_send_;
  std::vector<std::span<std::byte>> own_recv_;
  std::vector<std::span<const std::byte>>& send_;
  std::vector<std::span<std::byte>>& recv_;
};

// The direct run of hooks that describe memory, once me's steps are compiled.
ExchangeRun run_described(const ExchangePlanData& d, const Communicator& comm, const CompiledMember& direct,
                          CompiledRegions regions) {
  return run_compiled_exchange(comm.library(kExchangePlanLibrary), d.described->compiled_key(), d.processes, direct,
                               regions, d.described_compiled_options);
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
    const CompiledMember* direct = d.described->compiled(comm.rank());
    if (!direct)
      direct = co_await d.described->compile(comm.process(), comm.rank(), part.sends, part.receives, part.steps, hooks);
    const ExchangeMemory memory = d.described->memory(comm.rank(), hooks);
    const std::span<const std::byte> send[]{memory.send};
    const std::span<std::byte> recv[]{memory.recv};
    co_return co_await run_described(d, comm, *direct, CompiledRegions{send, recv});
  }
  RunRegions regions((*d.scratch)[part_index(d, part)], part);
  detail::check_buffer_sizes("ExchangePlan::run", comm.rank(), part.sends, part.receives, hooks, regions.send(),
                             regions.recv());
  for (std::size_t i = 0; i < part.sends.size(); ++i) hooks.before_send(i);
  const ExchangeRunStats stats = co_await run_copies(d, part, comm, regions.regions());
  for (std::size_t j = 0; j < part.receives.size(); ++j) hooks.after_receive(j);
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

Task<ExchangeRunStats> run_span_messages(const ExchangePlanData& d, Communicator comm,
                                         std::span<const std::span<const std::byte>> send,
                                         std::span<const std::span<std::byte>> recv) {
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
    if (start > buffer || entries[i].bytes > buffer - start)
      past_the_end(me, side, direction, i, entries[i], start, buffer);
  }
}

}  // namespace

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

bool compiled(const ExchangePlanData& d, const Communicator&) {
  return d.options.execution == ExchangeExecution::compiled;
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
    const std::uint64_t run = (*d.run_counts)[part_index(d, *part)].runs.fetch_add(1, std::memory_order_relaxed);
    const DrsnOptions drsn{stream_seed(d.options.seed, run), d.options.drsn_retry_yields, d.options.drsn_monitor};
    const DrsnStats s = co_await execute_drsn(lib, part->sends, part->receives, hooks, drsn);
    stats.busy_lock_inquiries = s.inquiries;
  }
  co_return stats;
}

void check_span_counts(Rank me, const ExchangePart& part, std::size_t sends, std::size_t recvs) {
  if (sends != part.sends.size() || recvs != part.receives.size()) [[unlikely]]
    wrong_span_counts(me, part, sends, recvs);
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
  return run_copies(d, *part, comm, CompiledRegions{send, recv}, CompiledRegionCheck{&check_part_sizes, part});
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
  RunRegions regions((*d.scratch)[part_index(d, *part)], *part);
  for (std::size_t i = 0; i < part->sends.size(); ++i) regions.send()[i] = hooks.send_buffer(i);
  for (std::size_t j = 0; j < part->receives.size(); ++j) regions.recv()[j] = hooks.recv_buffer(j);
  co_return co_await run_copies(d, *part, comm, regions.regions());
}

namespace {

// Whether `split` holds a started run; one of a job that failed in between is over, and dropped.
bool started(SplitRun& split) {
  if (split.run && !split.comm.valid()) split.run.reset();
  return split.run.has_value();
}

void refuse_if_started(SplitRun& split, const Communicator& comm, const char* call) {
  if (!started(split)) return;
  split.run->refuse_while_started(std::string("switchyard: ") + call + " on rank " + std::to_string(comm.rank()) +
                                  ": a second start before the wait of the first (each start is followed by one "
                                  "wait)");
}

}  // namespace

detail::SplitRun& split_to_start(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm,
                                 const char* call) {
  detail::SplitRun& split = (*d.split)[part_index(d, part)];
  refuse_if_started(split, comm, call);
  return split;
}

void refuse_second_start(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm,
                         const char* call) {
  if (SplitRun* split = d.split->made(part_index(d, part))) refuse_if_started(*split, comm, call);
}

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

void start_hooks(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm, ExchangeHooks& hooks) {
  SplitRun& split = split_to_start(d, part, comm);
  const CompiledMember* direct =
      compiled(d, comm) && runs_described(d, comm, hooks) ? d.described->compiled(comm.rank()) : nullptr;
  if (!direct) return start_split(split, comm, ExchangeRun(run_part(d, comm, hooks)));  // recorded: it runs in the wait
  const ExchangeMemory memory = d.described->memory(comm.rank(), hooks);
  split.send[0] = memory.send;
  split.recv[0] = memory.recv;
  start_split(split, comm, run_described(d, comm, *direct, CompiledRegions{split.send, split.recv}));
}

ExchangeRun wait_split(const ExchangePlanData& d, const Communicator& comm) {
  const ExchangePart* part = part_for_run(d, comm);
  if (!part) return ExchangeRun(no_run());
  detail::SplitRun* const split = d.split->made(part_index(d, *part));
  if (!split || !started(*split)) {
    throw InvalidArgument("switchyard: ExchangePlan::wait on rank " + std::to_string(comm.rank()) +
                          ": no start to wait for (a wait follows a start of the same process)");
  }
  ExchangeRun run = std::move(*split->run);
  split->run.reset();
  return run;
}

}  // namespace switchyard::schedulers::detail
