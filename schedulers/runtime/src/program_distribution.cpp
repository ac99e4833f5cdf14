#include "program_distribution.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "copy_steps.hpp"
#include "gathered_rows.hpp"
#include "plan_scheduler.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/process.hpp"
#include "switchyard/schedulers/executor.hpp"

namespace switchyard::schedulers::detail {

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

}  // namespace

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

}  // namespace switchyard::schedulers::detail
