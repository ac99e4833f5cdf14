#pragma once
// The data behind an ExchangePlan (exchange_plan.hpp): what each way of making
// a plan fills in (plan_from_matrix.hpp, plan_create.hpp) and its runs read
// (plan_runs.hpp).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "copy_steps.hpp"
#include "described_memory.hpp"
#include "made_on_use.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/compiled_exchange.hpp"
#include "switchyard/model/machine_file.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/schedulers/executor.hpp"

namespace switchyard::schedulers::detail {

enum class Scheme : std::uint8_t { phased, ac, drsn };

// One member's side of a plan: its messages, for phased plans its program,
// and the steps of a compiled run.
struct ExchangePart {
  Rank rank = 0;  // the member whose part it is
  std::vector<MatrixEntry> sends, receives;
  ProcessPlan program;
  MemberSteps steps;
  CompiledMember member;  // spans into `steps`, which never move once set
  void set_steps(MemberSteps s) {
    steps = std::move(s);
    member = CompiledMember{steps.incoming, steps.outgoing};
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
  // One per part each, made by the part's member (made_on_use.hpp).
  std::unique_ptr<MadeOnUse<RunCount>> run_counts;
  std::unique_ptr<MadeOnUse<RegionScratch>> scratch;
  std::unique_ptr<MadeOnUse<SplitRun>> split;
  // A compiled run's exchange key (run_compiled_exchange): how each is agreed
  // across nodes is at local_compiled_key() and shared_compiled_key().
  std::uint64_t compiled_key = 0;
  CompiledExchangeOptions compiled_options;  // set once the plan is made (set_compiled_options)
  // The cores' programs of the compiled runs, kept from job to job: those of
  // compiled_key, and those of the described memory's key (with its options).
  std::shared_ptr<CompiledProgramCache> compiled_programs = make_compiled_program_cache();
  std::shared_ptr<CompiledProgramCache> described_programs = make_compiled_program_cache();
  CompiledExchangeOptions described_compiled_options;
  std::optional<model::MachineFile> machine;  // options.machine's copy
  // Plans from the whole pattern: the direct copies of hooks that describe memory.
  std::unique_ptr<DescribedMemory> described;
};

// A new plan's data: `parts` parts (create(): the owner's alone) of a plan for
// `processes` processes, with its own copy of options.machine.
std::unique_ptr<ExchangePlanData> new_plan_data(ExchangePlanOptions options, Scheme scheme, Rank processes,
                                                std::size_t parts);

// How the compiled runs of a finished plan copy (compiled_exchange.hpp).
void set_compiled_options(ExchangePlanData& d);

// Where `part` stands among d's parts (its scratch, run count and split run).
inline std::size_t part_index(const ExchangePlanData& d, const ExchangePart& part) {
  return static_cast<std::size_t>(&part - d.parts.data());
}

}  // namespace switchyard::schedulers::detail
