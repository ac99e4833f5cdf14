#include "plan_agreement.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gathered_rows.hpp"
#include "plan_scheduler.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::schedulers::detail {

namespace {

// A member's options of create() in words: those that decide which
// collectives create() and its runs take.
std::string options_text(const ExchangePlanOptions& o) {
  return "scheduler '" + o.scheduler.str() + "', " +
         (o.execution == ExchangeExecution::compiled ? "compiled" : "on messages") +
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

}  // namespace

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

}  // namespace switchyard::schedulers::detail
