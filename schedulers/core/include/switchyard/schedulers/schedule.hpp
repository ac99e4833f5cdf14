#pragma once
/// @file
/// A static schedule: a list of phases, each a partial permutation (every
/// process sends at most one and receives at most one transfer). A transfer is a
/// byte range of one matrix entry; only schedulers that split messages (RS_NH,
/// optimal-bytes) produce ranges shorter than the whole entry. Schedules made
/// elsewhere, like array redistribution's naive one, may have contention: a
/// process receiving (or sending) several transfers in one phase.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"

namespace switchyard::schedulers {

/// A byte range of one matrix entry, sent in one phase.
struct Transfer {
  Rank src = 0;  ///< the sender
  Rank dst = 0;  ///< the receiver
  std::uint64_t offset = 0;  ///< into the message of entry (src, dst)
  std::uint64_t bytes = 0;  ///< length of the range
  bool operator==(const Transfer&) const = default;  ///< same entry and range
};

/// The transfers of one phase.
using Phase = std::vector<Transfer>;

/// Sum over phases of the largest transfer in the phase: the time model of the
/// papers with per-byte cost only.
std::uint64_t makespan_bytes(std::span<const Phase> phases) noexcept;

/// A scheduler's result for one matrix: its phases, run in order.
struct Schedule {
  Rank processes = 0;  ///< n, the matrix's size
  std::string scheduler;  ///< the name of the scheduler that made it
  std::vector<Phase> phases;  ///< in execution order; may include empty phases (LP)

  std::uint64_t transfers() const noexcept;  ///< over all phases
  /// The free function makespan_bytes over this schedule's phases.
  std::uint64_t makespan_bytes() const noexcept { return schedulers::makespan_bytes(phases); }
};

/// Whether a process may send or receive several transfers in one phase.
enum class Contention : std::uint8_t {
  forbidden,  ///< every phase a partial permutation: what the static schedulers make
  allowed,  ///< several per process and phase, but never two pieces of one message
};

/// Checks that the phases together carry every byte of every entry exactly once
/// (no gap, no overlap, nothing outside the matrix) and, unless contention is
/// allowed, that every phase is a partial permutation. Throws InvalidArgument
/// describing the first violation.
void validate(const Schedule& schedule, const CommMatrix& matrix, Contention contention = Contention::forbidden);

}  // namespace switchyard::schedulers
