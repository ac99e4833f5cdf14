#include "copy_steps.hpp"

namespace switchyard::schedulers::detail {

// Sources come in rank order, so counting per destination while walking the
// rows in order numbers each column by source.
std::vector<std::vector<std::uint32_t>> column_positions(const CommMatrix& m) {
  std::vector<std::vector<std::uint32_t>> position(m.size());
  std::vector<std::uint32_t> filled(m.size(), 0);
  for (Rank i = 0; i < m.size(); ++i) {
    const auto row = m.row(i);
    position[i].resize(row.size());
    for (std::size_t k = 0; k < row.size(); ++k) position[i][k] = filled[row[k].peer]++;
  }
  return position;
}

MemberSteps steps_of_program(Rank me, const ProcessPlan& program) {
  MemberSteps out;
  for (const PlanStep& st : program.steps) {
    if (st.recv_entry != PlanStep::kNone) {
      out.incoming.push_back(CopyStep{st.recv_from, me, st.recv_peer_entry, st.recv_entry, st.recv_offset,
                                      st.recv_offset, st.recv_bytes, st.phase});
    }
    if (st.send_entry != PlanStep::kNone) {
      out.outgoing.push_back(CopyStep{me, st.send_to, st.send_entry, st.send_peer_entry, st.send_offset, st.send_offset,
                                      st.send_bytes, st.phase});
    }
  }
  return out;
}

MemberSteps steps_of_entries(Rank me, std::span<const MatrixEntry> sends, std::span<const MatrixEntry> receives,
                             std::span<const std::uint32_t> dst_entry, std::span<const std::uint32_t> src_entry) {
  MemberSteps out;
  out.incoming.reserve(receives.size());
  out.outgoing.reserve(sends.size());
  for (std::size_t j = 0; j < receives.size(); ++j) {
    out.incoming.push_back(
        CopyStep{receives[j].peer, me, src_entry[j], static_cast<std::uint32_t>(j), 0, 0, receives[j].bytes, 0});
  }
  for (std::size_t i = 0; i < sends.size(); ++i) {
    out.outgoing.push_back(
        CopyStep{me, sends[i].peer, static_cast<std::uint32_t>(i), dst_entry[i], 0, 0, sends[i].bytes, 0});
  }
  return out;
}

}  // namespace switchyard::schedulers::detail
