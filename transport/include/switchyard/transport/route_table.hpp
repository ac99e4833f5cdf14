#pragma once
// Where every rank of a job lives: its node (a machine: one per MPI rank once
// jobs span machines; 0 on one machine), its core on that node, and its
// position among the ranks of that core. Built once per job and never changed,
// so every worker reads it freely; a sender routes by it and never touches the
// receiving process's own memory.

#include <cstdint>
#include <vector>

#include "switchyard/transport/message.hpp"

namespace switchyard::detail {

struct Route {
  std::uint32_t node = 0;
  std::uint32_t core = 0;   // worker index on the node
  std::uint32_t local = 0;  // index among the ranks of that core
};

class RouteTable {
 public:
  RouteTable() = default;
  // core_of[r]: the worker index of rank r; every rank on node 0.
  explicit RouteTable(const std::vector<std::uint32_t>& core_of, std::uint32_t cores) : routes_(core_of.size()) {
    std::vector<std::uint32_t> count(cores, 0);
    for (std::size_t r = 0; r < core_of.size(); ++r) routes_[r] = Route{0, core_of[r], count[core_of[r]]++};
  }
  const Route& operator[](Rank r) const noexcept { return routes_[r]; }
  Rank size() const noexcept { return static_cast<Rank>(routes_.size()); }

 private:
  std::vector<Route> routes_;
};

}  // namespace switchyard::detail
