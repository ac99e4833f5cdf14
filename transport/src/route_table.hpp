#pragma once
// Where every rank of a job lives: its node (a machine: one per MPI rank once
// jobs span machines; 0 on one machine), its core on that node, and its
// position among the ranks of that core. Built once per job and never changed,
// so every worker reads it freely; a sender routes by it and never touches the
// receiving process's own memory.
//
// Cores are also numbered across the job ("global cores"): node 0's cores
// first, then node 1's, and so on. What every node must agree on (collective
// leaders, per-destination queues of the network transport) is indexed by it.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "switchyard/assert.hpp"
#include "switchyard/types.hpp"

namespace switchyard::detail {

struct Route {
  std::uint32_t node = 0;
  std::uint32_t core = 0;  // worker index on the node
  std::uint32_t local = 0;  // index among the ranks of that core
};

class RouteTable {
 public:
  RouteTable() = default;
  // core_of[r]: the worker index of rank r; every rank on node 0.
  explicit RouteTable(const std::vector<std::uint32_t>& core_of, std::uint32_t cores)
      : RouteTable(std::vector<std::uint32_t>(core_of.size(), 0), core_of, {cores}) {}
  // node_of[r], core_of[r]: where rank r lives; cores_per_node[k]: node k's workers.
  RouteTable(const std::vector<std::uint32_t>& node_of, const std::vector<std::uint32_t>& core_of,
             const std::vector<std::uint32_t>& cores_per_node)
      : routes_(core_of.size()), first_core_(cores_per_node.size() + 1, 0) {
    for (std::size_t k = 0; k < cores_per_node.size(); ++k) first_core_[k + 1] = first_core_[k] + cores_per_node[k];
    std::vector<std::uint32_t> count(first_core_.back(), 0);
    for (std::size_t r = 0; r < core_of.size(); ++r) {
      routes_[r] = Route{node_of[r], core_of[r], count[first_core_[node_of[r]] + core_of[r]]++};
    }
  }
  const Route& operator[](Rank r) const noexcept {
    SWITCHYARD_ASSERT(r < routes_.size());
    return routes_[r];
  }
  Rank size() const noexcept { return static_cast<Rank>(routes_.size()); }

  std::uint32_t nodes() const noexcept { return static_cast<std::uint32_t>(first_core_.size() - 1); }
  std::uint32_t cores_on(std::uint32_t node) const noexcept { return first_core_[node + 1] - first_core_[node]; }
  std::uint32_t global_cores() const noexcept { return first_core_.back(); }
  std::uint32_t global_core(const Route& r) const noexcept { return first_core_[r.node] + r.core; }
  std::uint32_t global_core(Rank r) const noexcept { return global_core(routes_[r]); }
  // The node and core of global core g (local 0).
  Route core_route(std::uint32_t g) const noexcept {
    SWITCHYARD_ASSERT(g < global_cores());
    const auto node = static_cast<std::uint32_t>(std::upper_bound(first_core_.begin(), first_core_.end(), g) -
                                                 first_core_.begin() - 1);
    return Route{node, g - first_core_[node], 0};
  }

 private:
  std::vector<Route> routes_;
  std::vector<std::uint32_t> first_core_{0};  // node k's cores are global cores [first_core_[k], first_core_[k+1])
};

}  // namespace switchyard::detail
