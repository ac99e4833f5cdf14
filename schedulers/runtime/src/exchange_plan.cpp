#include "switchyard/schedulers/exchange_plan.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exchange_plan_data.hpp"
#include "hooks_support.hpp"
#include "plan_create.hpp"
#include "plan_from_matrix.hpp"
#include "plan_runs.hpp"
#include "switchyard/errors.hpp"

// The public class's methods. Making a plan goes down once: from the whole
// pattern (plan_from_matrix.hpp) or together (plan_create.hpp), each a
// sequence of calls into the files below it; runs go to plan_runs.hpp.

namespace switchyard::schedulers {

namespace {

using detail::ExchangePart;
using detail::ExchangePlanData;
using detail::Scheme;

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

ExchangePlan::ExchangePlan(const CommMatrix& m, ExchangePlanOptions options)
    : data_(detail::plan_from_matrix(m, std::move(options))) {}

ExchangePlan::ExchangePlan(const CommMatrix& m, SchedulerName scheduler)
    : ExchangePlan(m, ExchangePlanOptions{.scheduler = scheduler}) {}

ExchangePlan ExchangePlan::from_schedule(const CommMatrix& m, Schedule schedule, ExchangePlanOptions options) {
  return ExchangePlan(detail::plan_from_schedule(m, std::move(schedule), std::move(options)));
}

ExchangePlan::ExchangePlan(std::unique_ptr<ExchangePlanData> data) : data_(std::move(data)) {}
// A plan destroyed with split runs in flight fails their jobs (CompiledRun::abandon),
// its data kept until they end.
ExchangePlan::~ExchangePlan() {
  ExchangePlanData* const d = data_.get();  // data_ is moved into `keep` on the first run found
  if (!d) return;
  std::shared_ptr<const ExchangePlanData> keep;
  for (std::size_t k = 0; k < d->parts.size(); ++k) {
    detail::SplitRun* const made = d->split->made(k);
    if (!made || !made->run || !made->comm.valid()) continue;  // none started, or its job is over
    detail::SplitRun& split = *made;
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

std::span<const MatrixEntry> ExchangePlan::sends(Rank r) const { return part_of(*data_, r).sends; }
std::span<const MatrixEntry> ExchangePlan::receives(Rank r) const { return part_of(*data_, r).receives; }

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
  co_return ExchangePlan(co_await detail::create_plan(comm, sends, std::move(options)));
}

void ExchangePlan::start(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                         std::span<const std::span<std::byte>> recv) const {
  const ExchangePart* part = detail::part_for_run(*data_, comm);
  if (!part) return;
  detail::SplitRun& split = detail::split_to_start(*data_, *part, comm);
  detail::start_split(split, comm, detail::run_spans(*data_, comm, send, recv));
}

void ExchangePlan::start(const Communicator& comm, std::span<const std::byte> send_buffer,
                         std::span<const std::uint64_t> send_displacements, std::span<std::byte> recv_buffer,
                         std::span<const std::uint64_t> recv_displacements) const {
  const ExchangePart* part = detail::part_for_run(*data_, comm);
  if (!part) return;
  detail::SplitRun& split = detail::split_to_start(*data_, *part, comm);
  detail::start_split(split, comm, run(comm, send_buffer, send_displacements, recv_buffer, recv_displacements));
}

void ExchangePlan::start(const Communicator& comm, ExchangeHooks& hooks) const {
  const ExchangePart* part = detail::part_for_run(*data_, comm);
  if (!part) return;
  detail::start_hooks(*data_, *part, comm, hooks);
}

void ExchangePlan::refuse_second_start(const Communicator& comm, const char* call) const {
  if (const ExchangePart* part = detail::part_for_run(*data_, comm))
    detail::refuse_second_start(*data_, *part, comm, call);
}

ExchangeRun ExchangePlan::wait(const Communicator& comm) const { return detail::wait_split(*data_, comm); }

// The public calls copy the communicator into the coroutine's frame (or, for
// a compiled run, take its library duplicate at once): a caller's temporary (a
// Process converted on the way in) may be gone by the time the task is awaited.
ExchangeRun ExchangePlan::run(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                              std::span<const std::span<std::byte>> recv) const {
  return detail::run_spans(*data_, comm, send, recv);
}

ExchangeRun ExchangePlan::run(const Communicator& comm, std::span<const std::byte> send_buffer,
                              std::span<const std::uint64_t> send_displacements, std::span<std::byte> recv_buffer,
                              std::span<const std::uint64_t> recv_displacements) const {
  return ExchangeRun(
      detail::run_displaced(*data_, comm, send_buffer, send_displacements, recv_buffer, recv_displacements));
}

ExchangeRun ExchangePlan::run(const Communicator& comm, ExchangeHooks& hooks) const {
  return ExchangeRun(detail::run_part(*data_, comm, hooks));
}

BoundExchange ExchangePlan::bind(const Communicator& comm, std::span<const std::span<const std::byte>> send,
                                 std::span<const std::span<std::byte>> recv) const {
  const ExchangePlanData& d = *data_;
  BoundExchange b;
  b.plan_ = &d;
  b.comm_ = comm;
  const ExchangePart* part = detail::part_for_run(d, comm);
  if (!part) return b;  // a member beyond the plan: its runs do nothing
  detail::check_span_counts(comm.rank(), *part, send.size(), recv.size());
  detail::check_buffer_sizes("ExchangePlan::bind", part->rank, part->sends, part->receives, send, recv);
  std::vector<std::span<const std::byte>> sends(send.begin(), send.end());
  std::vector<std::span<std::byte>> receives(recv.begin(), recv.end());
  if (detail::compiled(d, comm)) {
    b.copies_ = CompiledBinding(comm.library(kExchangePlanLibrary), d.compiled_key, d.processes, part->member,
                                std::move(sends), std::move(receives), d.compiled_options);
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

ExchangeRun BoundExchange::run_uncompiled() {
  if (!plan_)
    throw InvalidArgument("switchyard: BoundExchange::run: the binding is empty (default-made or moved from)");
  return detail::run_spans(*plan_, comm_, send_, recv_);
}

void BoundExchange::start() {
  if (!plan_)
    throw InvalidArgument("switchyard: BoundExchange::start: the binding is empty (default-made or moved from)");
  const detail::ExchangePart* part = detail::part_for_run(*plan_, comm_);
  if (!part) return;  // a member beyond the plan: nothing to start, as run()
  detail::SplitRun& split = detail::split_to_start(*plan_, *part, comm_, "BoundExchange::start");
  detail::start_split(split, comm_, run());
}

}  // namespace switchyard::schedulers
