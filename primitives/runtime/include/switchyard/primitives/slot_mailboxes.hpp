#pragma once
// Runs a slot schedule on the runtime's mailboxes: one process per node of the
// virtual network, each packet a message of B real bytes that moves only
// between neighbours, in the slot the schedule gives it, and every byte
// verified at every destination.
//
// Built once (SlotProgram: each process's sends and receives per slot, and
// every buffer), run any number of times without allocating in the slot loop.
//
// No barrier between slots: a process in slot t posts its receives of slot t
// (matched by source and tag = t, one packet per arc per slot, so a message
// cannot match the wrong slot), sends what it holds (received in slots < t,
// which it has already waited for), and waits only for its own slot-t traffic.
// A process that runs ahead just finds its next messages early or waits for
// them; the slot order is enforced by the data each slot depends on, not by a
// global lockstep, and the slots each process runs are exactly the schedule's.
#include <cstdint>
#include <memory>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/primitives/slot_schedule.hpp"
#include "switchyard/primitives/virtual_network.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/task.hpp"

namespace switchyard::primitives {

/// The library key the program's messages travel under.
inline constexpr LibraryKey kSlotMailboxLibrary{"switchyard.primitives.slot_mailboxes"};

/// The bytes of packet p as its origin o contributes them: the exchange payload
/// of schedulers/payload.hpp with seed p and source o, so a byte in the wrong
/// place, from the wrong packet or origin, or counted twice in a combination
/// shows. Combining adds 64-bit words modulo 2^64 (a tail shorter than a word
/// adds bytewise modulo 2^8): associative and commutative.
void fill_packet_bytes(std::span<std::byte> out, PacketId packet, Node origin);
/// Adds `add` into `into` as fill_packet_bytes' combination does (64-bit words, a bytewise tail).
void combine_packet_bytes(std::span<std::byte> into, std::span<const std::byte> add) noexcept;

/// What one SlotProgram::run() did.
struct MailboxRunResult {
  std::int32_t slots = 0;  ///< the highest slot any process ran, plus one
  std::int64_t messages = 0;  ///< packets sent between neighbours
  std::int64_t bytes_verified = 0;  ///< destination bytes compared with their expected value
  double wall_ms = 0;  ///< from a barrier before slot 0 to a barrier after the last
};

/// A slot schedule compiled for the mailboxes: each process's sends and receives
/// per slot and every buffer, built once and run many times.
class SlotProgram {
 public:
  /// Throws InvalidArgument if the schedule sends across a missing link,
  /// sends what its sender never received, or leaves a destination without its
  /// packet, or if the buffers would not fit in memory; bytes >= 1.
  SlotProgram(const VirtualNetwork& network, const PacketSet& packets, const SlotSchedule& schedule,
              std::uint64_t bytes);
  ~SlotProgram();  ///< frees the buffers
  SlotProgram(const SlotProgram&) = delete;
  SlotProgram& operator=(const SlotProgram&) = delete;

  Node processes() const noexcept;  ///< one per node of the network
  /// The buffers, ops and checks of a program are refused past this many bytes.
  static constexpr std::int64_t kMaxBytes = std::int64_t{4} << 30;
  /// A lower bound on a program's bytes, from the task alone (every packet has
  /// a buffer at its origin, every delivery takes a message at least): what a
  /// caller can check before routing the task, which on 5000 nodes takes seconds.
  static double bytes_at_least(std::int64_t packets, std::int64_t deliveries, std::uint64_t bytes) noexcept;
  /// Runs the job (one process per node) and verifies every destination's bytes;
  /// a wrong byte is an exception naming the node, packet and byte.
  MailboxRunResult run(Runtime& runtime, RunOptions options = {}) const;
  /// The part of one process, for callers that run their own job on a
  /// communicator of exactly processes() members.
  Task<void> run_process(Communicator comm) const;

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
};

}  // namespace switchyard::primitives
