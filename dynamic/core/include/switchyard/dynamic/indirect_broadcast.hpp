#pragma once
// Indirect dynamic broadcasting (Varvarigos section 3.4): successive PMNBs on
// k edge-disjoint spanning trees, each starting when the previous one has
// finished, each learning M by its parallel prefix: the static-to-dynamic
// wrapper around the PMNB of primitives/pmnb.hpp (X = 1/k, V = Lbar + 2 delta,
// the PMNB theorem T <= M/k + Lbar + 2 delta). All-port, full duplex.
#include "switchyard/dynamic/static_to_dynamic.hpp"
#include "switchyard/primitives/pmnb.hpp"

namespace switchyard::dynamic {

/// The PMNB of primitives/pmnb.hpp as a StaticAlgorithm: X = 1/k, V = Lbar + 2 delta.
class PmnbAlgorithm final : public StaticAlgorithm {
 public:
  /// `network` must outlive the algorithm; throws InvalidArgument when `trees`
  /// are not edge-disjoint spanning trees of it.
  PmnbAlgorithm(const primitives::VirtualNetwork& network, const primitives::EdgeDisjointTrees& trees);
  std::string name() const override { return "PMNB"; }  ///< "PMNB"
  std::int32_t nodes() const override { return nodes_; }  ///< N
  double per_request_slots() const override { return 1.0 / planner_.trees(); }
  double fixed_slots() const override { return planner_.mean_tree_diameter() + 2.0 * planner_.diameter(); }
  std::int64_t execute(std::span<const std::int32_t> origins, DeliverySink& sink) override;
  /// The planner every execution plans with.
  const primitives::PmnbPlanner& planner() const noexcept { return planner_; }

 private:
  std::int32_t nodes_;
  primitives::PmnbPlanner planner_;
};

}  // namespace switchyard::dynamic
