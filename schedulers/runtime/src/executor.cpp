#include "switchyard/schedulers/executor.hpp"

#include <algorithm>
#include <string>

#include "copy_steps.hpp"
#include "hooks_support.hpp"
#include "switchyard/detail/pooled_array.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/trace.hpp"

namespace switchyard::schedulers {

namespace {

using switchyard::detail::PooledArray;

std::uint32_t row_index(const Schedule& s, const CommMatrix& m, const Transfer& t, std::size_t phase) {
  const auto row = m.row(t.src);
  auto it = std::lower_bound(row.begin(), row.end(), t.dst, [](const MatrixEntry& e, Rank r) { return e.peer < r; });
  if (it == row.end() || it->peer != t.dst || t.offset > it->bytes || t.bytes > it->bytes - t.offset) {
    throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' phase " + std::to_string(phase) + ": transfer " +
                          std::to_string(t.src) + " -> " + std::to_string(t.dst) +
                          " is not within an entry of the matrix");
  }
  return static_cast<std::uint32_t>(it - row.begin());
}

// A message split over several phases is handed to the hooks once: before its
// first piece goes out, after its last piece has arrived. Phases run in order,
// and validate() allows no two pieces of one message in a phase, so a forward
// walk over a process's steps finds each first send, a backward walk each last
// receive.
void mark_pieces(std::vector<ProcessPlan>& plans, const CommMatrix& m, const std::vector<std::uint32_t>& column_sizes) {
  std::vector<bool> seen;
  for (ProcessPlan& plan : plans) {
    seen.assign(m.row(plan.rank).size(), false);
    for (PlanStep& st : plan.steps) {
      if (st.send_entry == PlanStep::kNone) continue;
      st.first_send_piece = !seen[st.send_entry];
      seen[st.send_entry] = true;
    }
    seen.assign(column_sizes[plan.rank], false);
    for (auto it = plan.steps.rbegin(); it != plan.steps.rend(); ++it) {
      if (it->recv_entry == PlanStep::kNone) continue;
      it->last_recv_piece = !seen[it->recv_entry];
      seen[it->recv_entry] = true;
    }
  }
}

}  // namespace

std::vector<ProcessPlan> make_process_plans(const Schedule& s, const CommMatrix& m, Contention contention) {
  const Rank n = m.size();
  if (s.processes != n) {
    throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' is for " + std::to_string(s.processes) +
                          " processes, the matrix has " + std::to_string(n));
  }
  const std::vector<std::vector<std::uint32_t>> column_pos = detail::column_positions(m);
  std::vector<std::uint32_t> column_sizes(n, 0);
  for (Rank i = 0; i < n; ++i) {
    for (const MatrixEntry& e : m.row(i)) ++column_sizes[e.peer];
  }

  std::vector<ProcessPlan> plans(n);
  for (Rank i = 0; i < n; ++i) plans[i].rank = i;
  // Per process, the first of its steps in the current phase whose send
  // (receive) is still free: with contention a phase takes several steps.
  std::vector<std::size_t> free_send(n, 0), free_recv(n, 0);
  for (std::size_t ph = 0; ph < s.phases.size(); ++ph) {
    const Tag tag = static_cast<Tag>(ph % kFirstReservedTag);
    auto step_for = [&](Rank r, std::vector<std::size_t>& free, const char* twice) -> PlanStep& {
      auto& steps = plans[r].steps;
      const bool in_phase = !steps.empty() && steps.back().phase == ph;
      if (!in_phase) free_send[r] = free_recv[r] = steps.size();
      std::size_t& next = free[r];
      if (next == steps.size()) {
        if (in_phase && contention == Contention::forbidden) {
          throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' phase " + std::to_string(ph) +
                                ": process " + std::to_string(r) + " " + twice + " twice");
        }
        steps.push_back(PlanStep{static_cast<std::uint32_t>(ph), tag});
      }
      return steps[next++];
    };
    for (const Transfer& t : s.phases[ph]) {
      if (t.src >= n || t.dst >= n) {
        throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' phase " + std::to_string(ph) + ": transfer " +
                              std::to_string(t.src) + " -> " + std::to_string(t.dst) +
                              " names a rank outside the matrix");
      }
      const std::uint32_t k = row_index(s, m, t, ph);
      PlanStep& out = step_for(t.src, free_send, "sends");
      out.send_entry = k;
      out.send_to = t.dst;
      out.send_offset = t.offset;
      out.send_bytes = t.bytes;
      out.send_peer_entry = column_pos[t.src][k];
      PlanStep& in = step_for(t.dst, free_recv, "receives");  // after `out` is filled: may grow the same vector
      in.recv_entry = column_pos[t.src][k];
      in.recv_from = t.src;
      in.recv_offset = t.offset;
      in.recv_bytes = t.bytes;
      in.recv_peer_entry = k;
    }
  }
  mark_pieces(plans, m, column_sizes);
  return plans;
}

namespace {

// The most receives and sends one phase group of a plan posts at once.
struct GroupSizes {
  std::size_t recvs = 0, sends = 0;
};

bool within(std::span<const MatrixEntry> entries, std::uint32_t k, std::uint64_t offset, std::uint64_t bytes) {
  return k == PlanStep::kNone ||
         (k < entries.size() && offset <= entries[k].bytes && bytes <= entries[k].bytes - offset);
}

// Everything a run checks before it posts anything. Out of the coroutine: the
// strings of the errors would otherwise take room in every run's frame.
GroupSizes check_run(Rank me, const ProcessPlan& plan, std::span<const MatrixEntry> sends,
                     std::span<const MatrixEntry> receives, ExchangeHooks& hooks) {
  if (plan.rank != me) {
    throw InvalidArgument("switchyard: execute on rank " + std::to_string(me) + ": given the plan of rank " +
                          std::to_string(plan.rank));
  }
  detail::check_buffer_sizes("execute", me, sends, receives, hooks);
  GroupSizes most, group;
  for (std::size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& s = plan.steps[k];
    // The plan and the entries may come from different matrices: a range
    // outside its entry is refused here rather than read or written.
    if (!within(sends, s.send_entry, s.send_offset, s.send_bytes) ||
        !within(receives, s.recv_entry, s.recv_offset, s.recv_bytes)) {
      throw InvalidArgument("switchyard: execute on rank " + std::to_string(me) + ", phase " + std::to_string(s.phase) +
                            ": the plan does not match the buffers' matrix");
    }
    if (k == 0 || s.phase != plan.steps[k - 1].phase) group = {};
    group.recvs += s.recv_entry != PlanStep::kNone;
    group.sends += s.send_entry != PlanStep::kNone;
    most.recvs = std::max(most.recvs, group.recvs);
    most.sends = std::max(most.sends, group.sends);
  }
  return most;
}

[[noreturn, gnu::cold]] void wrong_size(Rank me, const PlanStep& s, std::uint64_t got) {
  throw InvalidArgument("switchyard: execute on rank " + std::to_string(me) + ", phase " + std::to_string(s.phase) +
                        ": expected " + std::to_string(s.recv_bytes) + " bytes from rank " +
                        std::to_string(s.recv_from) + ", got " + std::to_string(got));
}

Task<void> run_plan(Communicator comm, const ProcessPlan& plan, std::span<const MatrixEntry> sends,
                    std::span<const MatrixEntry> receives, ExchangeHooks& hooks) {
  const GroupSizes most = check_run(comm.rank(), plan, sends, receives, hooks);
  const Communicator lib = comm.library(kScheduleExecutorLibrary);
  Process& p = comm.process();
  PooledArray<RecvTicket> recvs(most.recvs);
  PooledArray<const PlanStep*> recv_steps(most.recvs);  // the step of each receive ticket
  PooledArray<SendTicket> sent(most.sends);
  const std::vector<PlanStep>& steps = plan.steps;
  for (std::size_t begin = 0, end = 0; begin < steps.size(); begin = end) {
    std::size_t posted_recvs = 0, posted_sends = 0;
    const TraceSpan phase(p, TraceCategory::phase, "phase", TraceArgs{.label = "phase", .value = steps[begin].phase});
    for (end = begin; end < steps.size() && steps[end].phase == steps[begin].phase; ++end) {
      const PlanStep& s = steps[end];
      if (s.recv_entry == PlanStep::kNone) continue;
      recv_steps[posted_recvs] = &s;
      recvs.emplace(posted_recvs++, [&] {
        return lib.post_recv_into(s.recv_from, hooks.recv_buffer(s.recv_entry).subspan(s.recv_offset, s.recv_bytes),
                                  s.tag);
      });
    }
    for (std::size_t k = begin; k < end; ++k) {
      const PlanStep& s = steps[k];
      if (s.send_entry == PlanStep::kNone) continue;
      if (s.first_send_piece) hooks.before_send(s.send_entry);
      sent.emplace(posted_sends++, [&] {
        return lib.post_send(s.send_to, hooks.send_buffer(s.send_entry).subspan(s.send_offset, s.send_bytes), s.tag);
      });
    }
    // Each receive is handed over as it completes, in whatever order the
    // senders deliver. A group of one (every group of a valid static
    // schedule) waits on its ticket directly: wait_any would cost two more
    // coroutine frames and a scan.
    for (std::size_t left = posted_recvs; left > 0; --left) {
      std::size_t i = 0;
      if (posted_recvs == 1) {
        co_await p.wait(recvs[0]);
      } else {
        i = co_await p.wait_any(recvs.span().first(posted_recvs));
      }
      const PlanStep& s = *recv_steps[i];
      if (recvs[i].size() != s.recv_bytes) wrong_size(comm.rank(), s, recvs[i].size());
      recvs[i] = RecvTicket{};
      if (s.last_recv_piece) hooks.after_receive(s.recv_entry);
    }
    for (std::size_t k = 0; k < posted_sends; ++k) {
      if (!p.test(sent[k])) co_await p.wait(sent[k]);  // no frame when already complete, as eager sends are
    }
  }
}

void check_buffers_rank(Rank me, const ProcessPlan& plan, const ExchangeBuffers& buffers) {
  if (plan.rank != me || buffers.rank() != me) {
    throw InvalidArgument("switchyard: execute on rank " + std::to_string(me) + ": given the plan of rank " +
                          std::to_string(plan.rank) + " and the buffers of rank " + std::to_string(buffers.rank()));
  }
}

Task<void> run_plan_with_buffers(Communicator comm, const ProcessPlan& plan, ExchangeBuffers& buffers) {
  check_buffers_rank(comm.rank(), plan, buffers);
  detail::BufferHooks hooks(buffers);
  co_await run_plan(comm, plan, buffers.row(), buffers.column(), hooks);
}

}  // namespace

// The public calls copy the communicator into the coroutine's frame: a
// caller's temporary (a Process converted on the way in) may be gone by the
// time the task is awaited.
Task<void> execute(const Communicator& comm, const ProcessPlan& plan, std::span<const MatrixEntry> sends,
                   std::span<const MatrixEntry> receives, ExchangeHooks& hooks) {
  return run_plan(comm, plan, sends, receives, hooks);
}

Task<void> execute(const Communicator& comm, const ProcessPlan& plan, ExchangeBuffers& buffers) {
  return run_plan_with_buffers(comm, plan, buffers);
}

}  // namespace switchyard::schedulers
