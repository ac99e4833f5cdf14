#include "switchyard/contention/core_distance.hpp"

#include <hwloc.h>

#include <iterator>
#include <memory>
#include <string>
#include <type_traits>

#include "switchyard/errors.hpp"

namespace switchyard::contention {

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const noexcept { hwloc_topology_destroy(t); }
};
using TopologyHandle = std::unique_ptr<std::remove_pointer_t<hwloc_topology_t>, TopologyDeleter>;

TopologyHandle load_topology() {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) throw Error("switchyard: hwloc_topology_init failed");
  TopologyHandle handle(t);
  if (hwloc_topology_load(t) != 0) throw Error("switchyard: hwloc_topology_load failed");
  return handle;
}

hwloc_obj_t pu_of(hwloc_topology_t t, int cpu) {
  hwloc_obj_t pu = cpu < 0 ? nullptr : hwloc_get_pu_obj_by_os_index(t, static_cast<unsigned>(cpu));
  if (!pu) throw InvalidArgument("switchyard: CPU " + std::to_string(cpu) + " is not one of this machine's");
  return pu;
}

CoreDistance distance(hwloc_topology_t t, hwloc_obj_t a, hwloc_obj_t b) {
  hwloc_obj_t common = hwloc_get_common_ancestor_obj(t, a, b);
  if (hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, a) == hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, b) &&
      hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, a) != nullptr) {
    return CoreDistance::same_core;
  }
  // The smallest cache above both: the first cache at or above their common ancestor.
  for (hwloc_obj_t o = common; o; o = o->parent) {
    if (hwloc_obj_type_is_cache(o->type) && hwloc_obj_type_is_dcache(o->type)) {
      return o->attr->cache.depth <= 2 ? CoreDistance::same_l2 : CoreDistance::same_l3;
    }
  }
  return hwloc_bitmap_intersects(a->nodeset, b->nodeset) ? CoreDistance::same_numa : CoreDistance::other_numa;
}

}  // namespace

namespace {

struct DistanceName {
  std::string_view key, description;
};
// Indexed by CoreDistance.
constexpr DistanceName kDistanceNames[] = {{"smt", "same core (SMT sibling)"},
                                           {"l2", "same L2"},
                                           {"l3", "same L3"},
                                           {"numa", "same NUMA node, no shared cache"},
                                           {"remote", "other NUMA node"}};
static_assert(std::size(kDistanceNames) == kCoreDistances.size());

}  // namespace

std::string_view describe(CoreDistance d) noexcept { return kDistanceNames[static_cast<std::size_t>(d)].description; }

std::string_view key(CoreDistance d) noexcept { return kDistanceNames[static_cast<std::size_t>(d)].key; }

std::array<std::vector<int>, kCoreDistances.size()> cpus_by_distance(int from, std::span<const int> cpus) {
  const TopologyHandle topology = load_topology();
  hwloc_topology_t t = topology.get();
  const hwloc_obj_t origin = pu_of(t, from);
  std::array<std::vector<int>, kCoreDistances.size()> classes;
  for (const int cpu : cpus) {
    const hwloc_obj_t pu = pu_of(t, cpu);
    if (cpu == from) continue;
    classes[static_cast<std::size_t>(distance(t, origin, pu))].push_back(cpu);
  }
  return classes;
}

}  // namespace switchyard::contention
