#pragma once
// The three dynamic schemes in slot mode, measured beside their theorems: what
// `switchyard dynamic --mode slots` runs. A SlotModel is built once per
// (scheme, network) (trees, PMNB planner or the scatter schedules) and run at
// as many rates as a sweep asks for.
#include <memory>
#include <string>

#include "switchyard/dynamic/dynamic_report.hpp"
#include "switchyard/dynamic/slot_run.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::dynamic {

std::string scheme_name(DynamicScheme scheme);  ///< "indirect", "direct", "scatter"

/// One SlotModel::run(): the report row and the run's details.
struct SlotModeResult {
  DynamicReport report;  ///< time_unit "slot"; the bounds are the theorems' at this rate
  SlotRunResult run;  ///< the same run with its sampling errors, backlog and periods
  double light_load_bound = 0;  ///< indirect: 1.5 Lbar + 3 delta + 1/k (0 for the others)
  double wrapper_bound = 0;  ///< indirect and scatter: W + X + min(W - V, ρW) (0 for direct)
};

/// One dynamic scheme on one virtual network in slot mode, built once and run at many rates.
class SlotModel {
 public:
  /// `network` must outlive the model. Throws InvalidArgument for a network of
  /// fewer than 2 nodes.
  SlotModel(DynamicScheme scheme, const primitives::VirtualNetwork& network);
  ~SlotModel();  ///< frees the scheme's state
  SlotModel(SlotModel&&) noexcept;  ///< takes over the other model's state
  SlotModel& operator=(SlotModel&&) noexcept;  ///< takes over the other model's state

  DynamicScheme scheme() const noexcept;  ///< the scheme it runs
  int trees() const noexcept;  ///< k (scatter: the links the scheme may use per node, 0)
  double stability_limit() const noexcept;  ///< the theorem's
  /// What the scheme runs on, e.g. "PMNB on 5 edge-disjoint spanning trees (cycle product), Lbar 25.4, delta 10".
  std::string description() const;
  /// X and V of the static algorithm (indirect and scatter; 0 for direct).
  double per_request_slots() const noexcept;
  double fixed_slots() const noexcept;  ///< V (see per_request_slots())

  /// Runs the scheme at options.rate (check_slot_run_options' rules; InvalidArgument
  /// otherwise) and sets the measurement beside the theorems' figures at that rate.
  SlotModeResult run(const SlotRunOptions& options);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace switchyard::dynamic
