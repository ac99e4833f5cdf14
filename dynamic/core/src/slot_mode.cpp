#include "switchyard/dynamic/slot_mode.hpp"

#include <cstdio>
#include <optional>

#include "switchyard/dynamic/direct_broadcast.hpp"
#include "switchyard/dynamic/dynamic_scatter.hpp"
#include "switchyard/dynamic/indirect_broadcast.hpp"
#include "switchyard/dynamic/theorems.hpp"
#include "switchyard/primitives/spanning_trees.hpp"

namespace switchyard::dynamic {

namespace sp = primitives;

std::string scheme_name(DynamicScheme scheme) {
  switch (scheme) {
    case DynamicScheme::indirect_broadcast:
      return "indirect";
    case DynamicScheme::direct_broadcast:
      return "direct";
    case DynamicScheme::scatter:
      return "scatter";
  }
  return "unknown";
}

struct SlotModel::State {
  DynamicScheme scheme;
  const sp::VirtualNetwork& network;
  sp::EdgeDisjointTrees trees;  // the broadcasts'
  std::optional<PmnbAlgorithm> pmnb;
  std::optional<SequentialScatterPmns> pmns;
  std::optional<DirectBroadcastTheory> direct;
};

SlotModel::SlotModel(DynamicScheme scheme, const sp::VirtualNetwork& network) {
  if (network.size() < 2)
    throw InvalidArgument("a dynamic scheme needs at least 2 nodes, not " + std::to_string(network.size()));
  state_ = std::make_unique<State>(State{scheme, network, {}, std::nullopt, std::nullopt, std::nullopt});
  if (scheme == DynamicScheme::scatter) {
    state_->pmns.emplace(network);
    return;
  }
  state_->trees = sp::edge_disjoint_spanning_trees(network);
  if (scheme == DynamicScheme::indirect_broadcast)
    state_->pmnb.emplace(network, state_->trees);
  else
    state_->direct.emplace(network.size(), state_->trees);
}

SlotModel::~SlotModel() = default;
SlotModel::SlotModel(SlotModel&&) noexcept = default;
SlotModel& SlotModel::operator=(SlotModel&&) noexcept = default;

DynamicScheme SlotModel::scheme() const noexcept { return state_->scheme; }
int SlotModel::trees() const noexcept { return state_->trees.count(); }

double SlotModel::per_request_slots() const noexcept {
  return state_->pmnb ? state_->pmnb->per_request_slots() : state_->pmns ? state_->pmns->per_request_slots() : 0;
}
double SlotModel::fixed_slots() const noexcept {
  return state_->pmnb ? state_->pmnb->fixed_slots() : state_->pmns ? state_->pmns->fixed_slots() : 0;
}

double SlotModel::stability_limit() const noexcept {
  const std::int32_t n = state_->network.size();
  switch (state_->scheme) {
    case DynamicScheme::indirect_broadcast:
      return indirect_limit(trees(), n);
    case DynamicScheme::direct_broadcast:
      return state_->direct->limit();
    case DynamicScheme::scatter:
      return static_to_dynamic_limit(per_request_slots(), n);
  }
  return 0;
}

std::string SlotModel::description() const {
  char text[256];
  if (state_->pmns) {
    std::snprintf(text, sizeof text, "PMNS: prefix (V = %g slots), then single-node scatters in turn (%s), X = %g",
                  fixed_slots(), state_->pmns->scatter_algorithm().c_str(), per_request_slots());
    return text;
  }
  const std::string trees =
      std::to_string(this->trees()) + " edge-disjoint spanning trees (" + state_->trees.construction + ")";
  if (state_->pmnb) {
    std::snprintf(text, sizeof text, "successive PMNBs on %s, Lbar %.2f, delta %d: X = 1/k, V = %g", trees.c_str(),
                  state_->pmnb->planner().mean_tree_diameter(), state_->pmnb->planner().diameter(), fixed_slots());
  } else {
    std::snprintf(text, sizeof text, "greedy FIFO forwarding on %s, a random tree per packet, lbar %.3f", trees.c_str(),
                  state_->direct->mean_tree_distance());
  }
  return text;
}

SlotModeResult SlotModel::run(const SlotRunOptions& options) {
  const sp::VirtualNetwork& g = state_->network;
  SlotModeResult out;
  out.run = state_->pmnb   ? run_static_to_dynamic(*state_->pmnb, options)
            : state_->pmns ? run_static_to_dynamic(*state_->pmns, options)
                           : run_direct_broadcast(g, state_->trees, options);
  DynamicReport& r = out.report;
  r.scheme = state_->scheme;
  r.topology = g.name();
  r.processes = static_cast<std::size_t>(g.size());
  r.k = static_cast<std::size_t>(trees());
  r.time_unit = "slot";
  r.rate = options.rate;
  r.stability_limit = stability_limit();
  r.stable = out.run.backlog.stable;
  r.broadcast_delay = out.run.broadcast_delay.mean;
  r.reception_delay = out.run.reception_delay.mean;
  r.generated = static_cast<std::uint64_t>(out.run.generated);
  r.delivered = static_cast<std::uint64_t>(out.run.delivered);
  if (state_->pmnb) {
    const auto& p = state_->pmnb->planner();
    r.broadcast_delay_bound = indirect_bound(p.trees(), g.size(), p.mean_tree_diameter(), p.diameter(), options.rate);
    out.light_load_bound = indirect_light_load_bound(p.trees(), p.mean_tree_diameter(), p.diameter());
  }
  if (state_->pmnb || state_->pmns) {
    out.wrapper_bound = static_to_dynamic_bound(per_request_slots(), fixed_slots(), g.size(), options.rate);
    if (state_->pmns) r.broadcast_delay_bound = out.wrapper_bound;
  }
  if (state_->direct) r.reception_delay_bound = state_->direct->reception_delay(options.rate);
  return out;
}

}  // namespace switchyard::dynamic
