#pragma once
// The static-to-dynamic wrapper (Varvarigos section 3.5): a static algorithm
// that executes M requests in at most X M + V slots, and during which every
// node learns M (so every node knows when it ends), repeated back to back: each
// execution serves the requests generated before it starts, and the next
// starts when it has finished. The theorem: stable for λ < 1/(N X), and the
// mean delay 𝓣 <= W + X + min(W - V, ρ W), ρ = λ N X (static_to_dynamic_bound
// in theorems.hpp). Indirect broadcasting is the instance on the PMNB,
// dynamic scattering the one on a PMNS.
#include <cstdint>
#include <span>
#include <string>

#include "switchyard/dynamic/slot_run.hpp"

namespace switchyard::dynamic {

/// Where a static algorithm reports its deliveries.
class DeliverySink {
 public:
  /// Request `request` (an index into the execution's origins) reaches `node`
  /// at the end of slot `slot` - 1 of the execution (slot >= 1).
  virtual void deliver(std::int32_t request, std::int32_t node, std::int64_t slot) = 0;

 protected:
  ~DeliverySink() = default;
};

/// A static algorithm for the static-to-dynamic wrapper: executes M requests at
/// once in at most X M + V slots.
class StaticAlgorithm {
 public:
  virtual ~StaticAlgorithm() = default;
  virtual std::string name() const = 0;  ///< for reports, e.g. "PMNB"
  virtual std::int32_t nodes() const = 0;  ///< N, the nodes of its network
  /// The constants of the theorem: every execution of M requests takes at most X M + V slots.
  virtual double per_request_slots() const = 0;  ///< X
  virtual double fixed_slots() const = 0;  ///< V
  /// Executes the task for one request per entry of `origins` (a node may
  /// appear several times), reporting each (request, destination) delivery to
  /// `sink` exactly once; returns the slots the execution takes (its last
  /// delivery or later: the time every node knows it has ended).
  virtual std::int64_t execute(std::span<const std::int32_t> origins, DeliverySink& sink) = 0;
};

/// Runs `algorithm` back to back under Poisson arrivals (options.rate per node
/// per slot) for options.slots slots, then drains: executions go on until every
/// request generated before the stop is delivered everywhere. Throws
/// InvalidArgument on bad options (check_slot_run_options), DeliveryError if the
/// algorithm loses or duplicates a delivery.
SlotRunResult run_static_to_dynamic(StaticAlgorithm& algorithm, const SlotRunOptions& options);

}  // namespace switchyard::dynamic
