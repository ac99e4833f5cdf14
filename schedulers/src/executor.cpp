#include "switchyard/schedulers/executor.hpp"

#include <algorithm>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

namespace {

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

}  // namespace

std::vector<ProcessPlan> make_process_plans(const Schedule& s, const CommMatrix& m) {
  const Rank n = m.size();
  if (s.processes != n) {
    throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' is for " + std::to_string(s.processes) +
                          " processes, the matrix has " + std::to_string(n));
  }
  // Column position of every entry: sources come in rank order, so counting
  // per destination while walking the rows in order numbers each column by source.
  std::vector<std::vector<std::uint32_t>> column_pos(n);
  std::vector<std::uint32_t> seen(n, 0);
  for (Rank i = 0; i < n; ++i) {
    const auto row = m.row(i);
    column_pos[i].resize(row.size());
    for (std::size_t k = 0; k < row.size(); ++k) column_pos[i][k] = seen[row[k].peer]++;
  }

  std::vector<ProcessPlan> plans(n);
  for (Rank i = 0; i < n; ++i) plans[i].rank = i;
  for (std::size_t ph = 0; ph < s.phases.size(); ++ph) {
    const Tag tag = static_cast<Tag>(ph % kFirstReservedTag);
    for (const Transfer& t : s.phases[ph]) {
      if (t.src >= n || t.dst >= n) {
        throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' phase " + std::to_string(ph) + ": transfer " +
                              std::to_string(t.src) + " -> " + std::to_string(t.dst) +
                              " names a rank outside the matrix");
      }
      const std::uint32_t k = row_index(s, m, t, ph);
      // A process's step for this phase is the last one of its plan, if it is
      // already there (from the other end of a transfer of this phase).
      auto step_of = [&](Rank r) -> PlanStep& {
        auto& steps = plans[r].steps;
        if (steps.empty() || steps.back().phase != ph) steps.push_back(PlanStep{static_cast<std::uint32_t>(ph), tag});
        return steps.back();
      };
      PlanStep& out = step_of(t.src);
      if (out.send_entry != PlanStep::kNone) {
        throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' phase " + std::to_string(ph) + ": process " +
                              std::to_string(t.src) + " sends twice");
      }
      out.send_entry = k;
      out.send_to = t.dst;
      out.send_offset = t.offset;
      out.send_bytes = t.bytes;
      PlanStep& in = step_of(t.dst);
      if (in.recv_entry != PlanStep::kNone) {
        throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' phase " + std::to_string(ph) + ": process " +
                              std::to_string(t.dst) + " receives twice");
      }
      in.recv_entry = column_pos[t.src][k];
      in.recv_from = t.src;
      in.recv_offset = t.offset;
      in.recv_bytes = t.bytes;
    }
  }
  return plans;
}

Task<void> execute(Process& p, const ProcessPlan& plan, ExchangeBuffers& buffers) {
  if (plan.rank != p.rank() || buffers.rank() != p.rank()) {
    throw InvalidArgument("switchyard: execute on rank " + std::to_string(p.rank()) + ": given the plan of rank " +
                          std::to_string(plan.rank) + " and the buffers of rank " + std::to_string(buffers.rank()));
  }
  // The plan and the buffers may come from different matrices: a range outside
  // its buffer is refused here rather than read or written.
  auto fits = [](std::span<const MatrixEntry> entries, std::uint32_t k, std::uint64_t offset, std::uint64_t bytes) {
    return k == PlanStep::kNone ||
           (k < entries.size() && offset <= entries[k].bytes && bytes <= entries[k].bytes - offset);
  };
  for (const PlanStep& s : plan.steps) {
    if (!fits(buffers.row(), s.send_entry, s.send_offset, s.send_bytes) ||
        !fits(buffers.column(), s.recv_entry, s.recv_offset, s.recv_bytes)) {
      throw InvalidArgument("switchyard: execute on rank " + std::to_string(p.rank()) + ", phase " +
                            std::to_string(s.phase) + ": the plan does not match the buffers' matrix");
    }
    RecvTicket recv;
    SendTicket send;
    if (s.recv_entry != PlanStep::kNone) {
      recv =
          p.post_recv_into(s.recv_from, buffers.recv_buffer(s.recv_entry).subspan(s.recv_offset, s.recv_bytes), s.tag);
    }
    if (s.send_entry != PlanStep::kNone) {
      send = p.post_send(s.send_to, buffers.send_buffer(s.send_entry).subspan(s.send_offset, s.send_bytes), s.tag);
    }
    if (recv.valid()) {
      co_await p.wait(recv);
      if (recv.size() != s.recv_bytes) {
        throw InvalidArgument("switchyard: execute on rank " + std::to_string(p.rank()) + ", phase " +
                              std::to_string(s.phase) + ": expected " + std::to_string(s.recv_bytes) +
                              " bytes from rank " + std::to_string(s.recv_from) + ", got " +
                              std::to_string(recv.size()));
      }
    }
    if (send.valid()) co_await p.wait(send);
  }
}

}  // namespace switchyard::schedulers
