#include "switchyard/contention/core_distance.hpp"

#include <hwloc.h>

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

std::string_view describe(CoreDistance d) noexcept {
  switch (d) {
    case CoreDistance::same_core:
      return "same core (SMT sibling)";
    case CoreDistance::same_l2:
      return "same L2";
    case CoreDistance::same_l3:
      return "same L3";
    case CoreDistance::same_numa:
      return "same NUMA node, no shared cache";
    case CoreDistance::other_numa:
      return "other NUMA node";
  }
  return "?";
}

std::string_view key(CoreDistance d) noexcept {
  switch (d) {
    case CoreDistance::same_core:
      return "smt";
    case CoreDistance::same_l2:
      return "l2";
    case CoreDistance::same_l3:
      return "l3";
    case CoreDistance::same_numa:
      return "numa";
    case CoreDistance::other_numa:
      return "remote";
  }
  return "?";
}

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
