#include "plan_create.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "copy_steps.hpp"
#include "plan_agreement.hpp"
#include "plan_keys.hpp"
#include "plan_scheduler.hpp"
#include "program_distribution.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/generate_recv.hpp"
#include "switchyard/schedulers/online.hpp"

namespace switchyard::schedulers::detail {

namespace {

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

}  // namespace

Task<std::unique_ptr<ExchangePlanData>> create_plan(Communicator comm, std::span<const MatrixEntry> sends,
                                                    ExchangePlanOptions options) {
  co_await agree_options(comm.library(kExchangePlanLibrary), options);
  if (options.scheduler == kAutoScheduler) options = co_await choose_together(comm, sends, std::move(options));
  // Every member refuses an unknown scheduler before any communication.
  const Scheme scheme = scheme_of(options.scheduler);
  std::unique_ptr<ExchangePlanData> d = new_plan_data(std::move(options), scheme, comm.size(), 1);
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
    if (d->options.execution == ExchangeExecution::compiled) {
      co_await learn_peer_entries(comm.library(kExchangePlanLibrary), mine);
    }
  }
  const Communicator lib = comm.library(kExchangePlanLibrary);
  d->compiled_key = co_await agree_compiled_key(lib);
  set_compiled_options(*d);
  if (d->options.execution == ExchangeExecution::compiled) {
    co_await prepare_compiled_exchange(lib, d->compiled_key, d->processes, mine.member, d->compiled_options);
  }
  co_return d;
}

}  // namespace switchyard::schedulers::detail
