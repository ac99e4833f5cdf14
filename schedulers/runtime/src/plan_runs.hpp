#pragma once
// A member's runs of a plan (exchange_plan.hpp's run, start and wait): on
// messages through the plan's executors, or compiled (compiled_exchange.hpp).

#include <cstddef>
#include <span>

#include "exchange_plan_data.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/schedulers/exchange_hooks.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

// The part comm.rank() runs, or nullptr for a member beyond a plan that
// allows larger communicators. Throws for a communicator the plan is not for.
const ExchangePart* part_for_run(const ExchangePlanData& d, const Communicator& comm);

// Whether a run is compiled (across nodes too: the runtime aggregates the
// messages between nodes per node pair) or goes on messages.
bool compiled(const ExchangePlanData& d, const Communicator& comm);

// Throws InvalidArgument unless the buffer lists' counts are the part's entries'.
void check_span_counts(Rank me, const ExchangePart& part, std::size_t sends, std::size_t recvs);

// A run that does nothing: a member beyond the plan.
Task<ExchangeRunStats> no_run();

// ExchangePlan::run's three forms: buffer lists, one buffer each way at
// displacements, hooks.
ExchangeRun run_spans(const ExchangePlanData& d, const Communicator& comm,
                      std::span<const std::span<const std::byte>> send, std::span<const std::span<std::byte>> recv);
Task<ExchangeRunStats> run_displaced(const ExchangePlanData& d, Communicator comm, std::span<const std::byte> send,
                                     std::span<const std::uint64_t> send_at, std::span<std::byte> recv,
                                     std::span<const std::uint64_t> recv_at);
Task<ExchangeRunStats> run_part(const ExchangePlanData& d, Communicator comm, ExchangeHooks& hooks);

// Split phase: me's slot for a start, refusing (as `call`) a second start before the wait.
SplitRun& split_to_start(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm,
                         const char* call = "ExchangePlan::start");
// The same refusal alone, making no slot where me never started one.
void refuse_second_start(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm,
                         const char* call);
// Starts `run`, recorded in `split` until its wait; nothing recorded if it throws.
void start_split(SplitRun& split, const Communicator& comm, ExchangeRun run);
// ExchangePlan::start with hooks: a compiled direct run of described memory
// starts at once, its regions kept in the split run; any other is recorded,
// and runs in the wait.
void start_hooks(const ExchangePlanData& d, const ExchangePart& part, const Communicator& comm, ExchangeHooks& hooks);
// ExchangePlan::wait: the started run of comm.rank(), handed over; InvalidArgument without a start.
ExchangeRun wait_split(const ExchangePlanData& d, const Communicator& comm);

}  // namespace switchyard::schedulers::detail
