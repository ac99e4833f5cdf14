#pragma once
// A superstep of the C³ model: local computation, then every transfer at once,
// on one or more independent submachines (sub-communicators). An algorithm is
// a list of supersteps.
//
// Transfers name the original messages they carry ("pieces", each L bytes in
// the collectives): an algorithm's description is complete enough to run it,
// so the runtime implementations and the model share one description of each
// algorithm's shape.

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/model/machine.hpp"

namespace switchyard::model {

/// One original message: from `origin` to `target` (processes of the whole machine).
struct Piece {
  ProcessId origin = 0;  ///< the process whose message it is
  ProcessId target = 0;  ///< the process it is for
  bool operator==(const Piece&) const = default;  ///< the same origin and target
};

/// L_ij: `bytes` from src to dst in this superstep, as one message; src == dst
/// is a local copy (a process's own share of a combined message). When the
/// superstep carries pieces, the message is pieces[first_piece,
/// first_piece + piece_count) of its submachine, concatenated in that order.
struct Transfer {
  ProcessId src = 0;  ///< the sender, a process of the whole machine
  ProcessId dst = 0;  ///< the receiver (== src: a local copy)
  std::uint64_t bytes = 0;  ///< L_ij: the message's size
  std::uint64_t first_piece = 0;  ///< the first of its pieces in the submachine's pieces
  std::uint64_t piece_count = 0;  ///< how many pieces it carries (0: none)
  /// Whether the runtime's implementation (model_collectives/src) copies the pieces
  /// one by one: the sender into one buffer before sending (`packed`), the
  /// receiver out of the buffer they arrived in (`unpacked`). Pieces already
  /// one after another in a buffer, and a message forwarded whole out of the
  /// buffer it arrived in, go without either copy.
  bool packed = false;
  bool unpacked = false;  ///< the receiver copies the pieces out one by one
  bool operator==(const Transfer&) const = default;  ///< every field equal
};

/// One independent submachine of a superstep: its members (processes of the
/// whole machine, in the order of their ranks in the sub-communicator, members[0]
/// its leader), its logical shape (for the machine's h' and b'), and the
/// transfers between its members.
struct Submachine {
  std::vector<ProcessId> members;  ///< processes of the whole machine, in rank order; members[0] leads
  Shape shape{};  ///< its logical shape, for h' and b'
  std::vector<Transfer> transfers;  ///< the messages between its members
  std::vector<Piece> pieces;  ///< empty when the transfers carry no pieces (exchanges)
  /// t_i: the most bytes one member reads or writes locally (packing and
  /// unpacking combined messages) before the transfers; computation units.
  std::uint64_t accessed_bytes = 0;
};

/// One superstep: computation, then the transfers of its independent submachines.
struct Superstep {
  std::string label;  ///< what the step does, for tables
  std::vector<Submachine> submachines;  ///< independent; the superstep costs the most expensive one
};

/// An algorithm of the C³ model: its supersteps, in order.
using Algorithm = std::vector<Superstep>;

/// Checks that every transfer and piece stays inside its submachine, members
/// are distinct across submachines and below `processes`, and that a transfer
/// carrying pieces has bytes = piece_count * piece_bytes. Throws
/// std::invalid_argument describing the first violation.
void validate(const Algorithm& algorithm, std::uint64_t processes, std::uint64_t piece_bytes);

}  // namespace switchyard::model
