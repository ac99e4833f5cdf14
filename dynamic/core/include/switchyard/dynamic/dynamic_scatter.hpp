#pragma once
// Dynamic scattering (Varvarigos section 3.5): the static-to-dynamic wrapper
// around a PMNS. The PMNS here is the simplest one whose time is linear in M
// with constants known in advance: the PMNB's parallel prefix (2H slots: every
// node learns M and the rank of each scatter), then the M single-node scatters
// one after another in rank order, each on the slot schedule the primitives'
// registry routes a single-node scatter with (all-port, full duplex). So
// X = max over origins of T_SNS(origin), V = 2H, and the scheme is stable for
// λ < 1/(N X). The paper asks for a better PMNS (the hypercube's necessary
// condition is λ <= 2/N; with T_SNS >= (N - 1)/d this one stays below d/N²
// there): the wrapper takes any StaticAlgorithm, so a better PMNS plugs in as one.
#include <vector>

#include "switchyard/dynamic/static_to_dynamic.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::dynamic {

/// A PMNS whose time is linear in M: the parallel prefix, then the M single-node
/// scatters one after another (see the file's description). Its X is the longest
/// single-node scatter, its V the prefix's 2H slots.
class SequentialScatterPmns final : public StaticAlgorithm {
 public:
  /// Routes (and checks in the slot simulator) the N single-node scatters once.
  explicit SequentialScatterPmns(const primitives::VirtualNetwork& network);
  std::string name() const override { return "PMNS"; }  ///< "PMNS"
  std::int32_t nodes() const override { return nodes_; }  ///< N
  double per_request_slots() const override { return static_cast<double>(longest_scatter_); }
  double fixed_slots() const override { return static_cast<double>(prefix_); }
  std::int64_t execute(std::span<const std::int32_t> origins, DeliverySink& sink) override;
  /// The registry's name of the single-node scatter algorithm it routes with.
  std::string scatter_algorithm() const { return scatter_algorithm_; }

 private:
  std::int32_t nodes_;
  std::int64_t prefix_;
  std::int64_t longest_scatter_ = 0;
  std::string scatter_algorithm_;
  std::vector<std::int32_t> scatter_slots_;  ///< T_SNS(s)
  std::vector<std::int32_t> arrival_;  ///< arrival_[s * N + d]: slot (from 1) the packet s -> d arrives
};

}  // namespace switchyard::dynamic
