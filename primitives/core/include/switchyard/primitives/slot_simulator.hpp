#pragma once
// The slot-exact simulator: executes a slot schedule on a virtual network
// under a link model, checking every transmission, and counts the slots. It
// keeps one holder bit per (node, packet) of a packet with several
// destinations, one location per routed packet, and one count per (node,
// packet) of a combining packet, so a 10^5-node SNB or a 4096-node TE fits.
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/primitives/slot_schedule.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::primitives {

/// A schedule that breaks a rule; the message says which slot, link and packet and why.
class IllegalSchedule : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// What a simulated schedule did.
struct SimulationResult {
  std::int32_t slots = 0;  ///< slots run, empty ones included
  std::int64_t transmissions = 0;  ///< packets moved across links
  std::int64_t deliveries = 0;  ///< (packet, destination) pairs completed
};

/// The simulator state builds once per task; state memory over a few GiB is
/// refused up front (InvalidArgument).
class SlotSimulator {
 public:
  /// Every packet at its origins; refuses state memory over a few GiB
  /// (InvalidArgument). `network` and `packets` must outlive it.
  SlotSimulator(const VirtualNetwork& network, LinkModel model, const PacketSet& packets);
  SlotSimulator(const SlotSimulator&) = delete;
  SlotSimulator& operator=(const SlotSimulator&) = delete;
  ~SlotSimulator();

  /// Runs the next slot: every transmission leaves with what its sender held at
  /// the start of the slot and arrives at the slot's end. Throws IllegalSchedule
  /// if a link does not exist, the sender does not hold the packet, a port or
  /// duplex limit is exceeded, or a combining packet would be counted twice.
  void run_slot(std::span<const Transmission> slot);
  std::int32_t slots_run() const noexcept;  ///< slots run so far
  /// Checks every destination holds its packet (all contributions, when
  /// combining); throws IllegalSchedule naming the first one missing.
  SimulationResult finish() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Runs every slot of `schedule`, then finish().
SimulationResult simulate(const VirtualNetwork& network, LinkModel model, const PacketSet& packets,
                          const SlotSchedule& schedule);

}  // namespace switchyard::primitives
