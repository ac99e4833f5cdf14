#include "switchyard/topology.hpp"

#include <hwloc.h>

#include <cstdlib>
#include <sstream>

#include "switchyard/errors.hpp"

namespace switchyard {

struct Topology::Impl {
  hwloc_topology_t topo = nullptr;
  ~Impl() {
    if (topo) hwloc_topology_destroy(topo);
  }
};

namespace {

struct Bitmap {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  ~Bitmap() { hwloc_bitmap_free(set); }
  std::string list() const {
    char* s = nullptr;
    hwloc_bitmap_list_asprintf(&s, set);
    std::string out = s ? s : "";
    std::free(s);
    return out;
  }
};

int logical_ancestor(hwloc_topology_t t, hwloc_obj_t pu, hwloc_obj_type_t type) {
  hwloc_obj_t o = hwloc_get_ancestor_obj_by_type(t, type, pu);
  return o ? static_cast<int>(o->logical_index) : -1;
}

}  // namespace

Topology::Topology() : impl_(std::make_unique<Impl>()) {
  if (hwloc_topology_init(&impl_->topo) != 0 || hwloc_topology_load(impl_->topo) != 0) {
    throw Error("switchyard: hwloc could not discover the machine topology");
  }
  hwloc_topology_t t = impl_->topo;
  Bitmap usable;
  hwloc_bitmap_copy(usable.set, hwloc_topology_get_allowed_cpuset(t));
  Bitmap process;
  if (hwloc_get_cpubind(t, process.set, HWLOC_CPUBIND_PROCESS) == 0)
    hwloc_bitmap_and(usable.set, usable.set, process.set);
  unsigned id;
  hwloc_bitmap_foreach_begin(id, usable.set) {
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, id);
    if (!pu) continue;
    CoreInfo c;
    c.os_index = static_cast<int>(id);
    c.core = logical_ancestor(t, pu, HWLOC_OBJ_CORE);
    c.package = logical_ancestor(t, pu, HWLOC_OBJ_PACKAGE);
    hwloc_obj_t numa = hwloc_get_next_obj_covering_cpuset_by_type(t, pu->cpuset, HWLOC_OBJ_NUMANODE, nullptr);
    c.numa_node = numa ? static_cast<int>(numa->logical_index) : -1;
    allowed_.push_back(c);
  }
  hwloc_bitmap_foreach_end();
  if (allowed_.empty()) throw Error("switchyard: hwloc found no CPU this process may run on");
}

Topology::~Topology() = default;

const CoreInfo* Topology::find(int os_index) const noexcept {
  for (const auto& c : allowed_) {
    if (c.os_index == os_index) return &c;
  }
  return nullptr;
}

bool Topology::bind_this_thread(int os_index) const {
  Bitmap set;
  hwloc_bitmap_only(set.set, static_cast<unsigned>(os_index));
  return hwloc_set_cpubind(impl_->topo, set.set, HWLOC_CPUBIND_THREAD | HWLOC_CPUBIND_STRICT) == 0 ||
         hwloc_set_cpubind(impl_->topo, set.set, HWLOC_CPUBIND_THREAD) == 0;
}

std::string Topology::thread_binding(std::thread::native_handle_type thread) const {
  Bitmap set;
  if (hwloc_get_thread_cpubind(impl_->topo, thread, set.set, 0) != 0) return "unknown";
  return set.list();
}

int Topology::this_thread_last_cpu() const {
  Bitmap set;
  if (hwloc_get_last_cpu_location(impl_->topo, set.set, HWLOC_CPUBIND_THREAD) != 0) return -1;
  return hwloc_bitmap_first(set.set);
}

std::uint64_t Topology::private_cache_bytes() const {
  hwloc_obj_t l2 = hwloc_get_obj_by_type(impl_->topo, HWLOC_OBJ_L2CACHE, 0);
  return l2 ? l2->attr->cache.size : 0;
}

std::string Topology::describe() const {
  hwloc_topology_t t = impl_->topo;
  std::ostringstream out;
  auto count = [&](hwloc_obj_type_t type) { return hwloc_get_nbobjs_by_type(t, type); };
  out << "machine: " << count(HWLOC_OBJ_PACKAGE) << " package(s), " << count(HWLOC_OBJ_NUMANODE) << " NUMA node(s), "
      << count(HWLOC_OBJ_CORE) << " core(s), " << count(HWLOC_OBJ_PU) << " hardware thread(s)\n";
  const std::pair<hwloc_obj_type_t, const char*> caches[] = {
      {HWLOC_OBJ_L1CACHE, "L1d"}, {HWLOC_OBJ_L2CACHE, "L2"}, {HWLOC_OBJ_L3CACHE, "L3"}};
  for (const auto& [type, name] : caches) {
    const int n = count(type);
    if (n <= 0) continue;
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, 0);
    out << "cache: " << n << " x " << name << " of " << (o->attr->cache.size / 1024) << " KiB, line "
        << o->attr->cache.linesize << " B\n";
  }
  out << "usable CPUs (OS number -> core, package, NUMA node):\n";
  for (const auto& c : allowed_) {
    out << "  cpu " << c.os_index << " -> core " << c.core << ", package " << c.package << ", numa " << c.numa_node
        << "\n";
  }
  return out.str();
}

}  // namespace switchyard
