#pragma once
// How near another core is to a given one, by what the two share in the
// machine as hwloc sees it: the nearest level wins. Node contention depends
// on it: a receiver's cache line that a sender on the same L2 writes moves
// less far than one written from another NUMA node.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace switchyard::contention {

/// How near another core is to a given one: the nearest level of the machine they share.
enum class CoreDistance : std::uint8_t {
  same_core,  ///< hardware threads of one physical core (SMT siblings)
  same_l2,  ///< another core under the same L2 (or L1) cache
  same_l3,  ///< another core under the same L3 (or deeper shared) cache
  same_numa,  ///< no shared cache, the same NUMA node
  other_numa,  ///< another NUMA node
};
/// Every CoreDistance, nearest first.
inline constexpr std::array kCoreDistances{CoreDistance::same_core, CoreDistance::same_l2, CoreDistance::same_l3,
                                           CoreDistance::same_numa, CoreDistance::other_numa};

/// "same core (SMT sibling)", "same L2", "same L3", "same NUMA node", "other NUMA node"
std::string_view describe(CoreDistance d) noexcept;
/// "smt", "l2", "l3", "numa", "remote": for option values and JSON
std::string_view key(CoreDistance d) noexcept;

/// Each CPU of `cpus` (OS numbers) other than `from`, in the class of the
/// nearest level it shares with `from`; indexed by CoreDistance, each class in
/// the order of `cpus`. Throws InvalidArgument for a CPU the machine lacks.
std::array<std::vector<int>, kCoreDistances.size()> cpus_by_distance(int from, std::span<const int> cpus);

}  // namespace switchyard::contention
