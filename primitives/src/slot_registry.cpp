// The registry of slot algorithms: for each task, the first entry whose
// applies() accepts the network and link model runs. Specialised algorithms
// come first, the general ones (any network, any link model) last, so every
// task has one. To add an algorithm, add its entry above the general ones.
#include <stdexcept>
#include <string>

#include "slot_support.hpp"
#include "switchyard/primitives/isotropic.hpp"
#include "switchyard/primitives/pmnb.hpp"

namespace switchyard::primitives {

std::string_view bound_kind_name(BoundKind kind) noexcept {
  switch (kind) {
    case BoundKind::lower: return "lower bound";
    case BoundKind::upper: return "upper bound";
    case BoundKind::optimum: return "optimum";
  }
  return "bound";
}

namespace {

using detail::task_lower_bound;

// The task's lower bound; stated as the optimum when the algorithm is proven to
// meet it (the tests hold it to that).
SlotAlgorithmResult finish(std::string algorithm, SlotSchedule schedule, const VirtualNetwork& g, LinkModel m,
                           const TaskInstance& task, bool optimal) {
  SlotBound lower = task_lower_bound(g, m, task);
  if (optimal) lower.kind = BoundKind::optimum;
  return {std::move(algorithm), std::move(schedule), {std::move(lower)}, std::nullopt};
}

bool is_complete(const VirtualNetwork& g, LinkModel) { return g.kind() == NetworkKind::complete; }
bool complete_one_port(const VirtualNetwork& g, LinkModel m) {
  return g.kind() == NetworkKind::complete && m.ports == Ports::one_port;
}
bool hypercube_one_port(const VirtualNetwork& g, LinkModel m) {
  return g.kind() == NetworkKind::hypercube && m.ports == Ports::one_port;
}
bool complete_all_port(const VirtualNetwork& g, LinkModel m) { return is_complete(g, m) && m.ports == Ports::all_port; }
// Isotropic TE meets the critical sum h only when both ends of a link send in one slot.
bool lattice_all_port_full(const VirtualNetwork& g, LinkModel m) {
  return (g.kind() == NetworkKind::hypercube || g.kind() == NetworkKind::torus) &&
         m == LinkModel{Ports::all_port, Duplex::full};
}
bool all_port(const VirtualNetwork&, LinkModel m) { return m.ports == Ports::all_port; }

// The accumulation / gather tasks are the duals of the broadcast / scatter
// tasks: the forward instance has every packet's ends swapped (same ids), and
// its schedule reversed in time and direction executes the dual.
Task forward_task(Task t) {
  switch (t) {
    case Task::sna: return Task::snb;
    case Task::ssna: return Task::ssnb;
    case Task::sng: return Task::sns;
    case Task::ssng: return Task::ssns;
    case Task::pmna: return Task::pmnb;
    case Task::pmng: return Task::pmns;
    default: return t;
  }
}

TaskInstance forward_instance(const TaskInstance& task) {
  TaskInstance f;
  f.task = forward_task(task.task);
  f.root = task.root;
  f.active = task.active;
  f.packets = PacketSet(task.packets.nodes(), false);
  for (PacketId p = 0; p < task.packets.size(); ++p) f.packets.add(task.packets.destinations(p), task.packets.origins(p));
  return f;
}

template <SlotAlgorithmFn Forward>
SlotAlgorithmResult by_duality(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  auto forward = Forward(g, m, forward_instance(task));
  forward.schedule = detail::reversed(forward.schedule);
  forward.algorithm = "reversed " + forward.algorithm;
  return forward;
}

SlotAlgorithmResult direct(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  // All-port: optimal (1 slot, or 2 when half duplex needs a link both ways, which no relay avoids).
  // One-port (permutation, one-to-one): optimal under full duplex.
  auto s = detail::direct_schedule(task, m);
  const bool optimal = m.ports == Ports::all_port || m.duplex == Duplex::full || s.slots() <= 1;
  return finish("direct", std::move(s), g, m, task, optimal);
}

SlotAlgorithmResult binomial(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  // Complete graph: ceil(log2(k+1)) slots, the one-port doubling bound. Hypercube SNB: d slots = the diameter.
  const auto s = task.packets.size() == 0 ? SlotSchedule{}
                                          : detail::binomial_broadcast(g, task.root, 0, task.packets.destinations(0));
  const bool optimal = g.kind() == NetworkKind::complete || task.task == Task::snb;
  return finish("binomial tree", s, g, m, task, optimal);
}

SlotAlgorithmResult sequential(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  // The root emits one packet per slot: |D| slots is the one-port emission bound.
  return finish("root sends to each in turn", detail::sequential_scatter(task), g, m, task, true);
}

SlotAlgorithmResult shifted(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  // N - 1 slots: every node sends (or receives) N - 1 packets, one per slot. Half duplex with N even takes N.
  const bool optimal = m.duplex == Duplex::full || g.size() % 2 == 1;
  return finish("shifted direct exchange (slot t: v -> v+t+1)", detail::shifted_exchange(task, m), g, m, task, optimal);
}

SlotAlgorithmResult tree(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  // All-port: every target is reached at its distance from the root, the optimum.
  const auto s = task.packets.size() == 0
                     ? SlotSchedule{}
                     : detail::tree_broadcast(detail::bfs_tree(g, task.root), m, 0, task.packets.destinations(0));
  return finish(m.ports == Ports::all_port ? "BFS tree" : "BFS tree, children by remaining depth", s, g, m, task,
                m.ports == Ports::all_port);
}

SlotAlgorithmResult greedy_routed(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  const detail::Router router(g);
  const detail::RoutedForwarding forwarding(router, task.packets);
  // One packet alone (one-to-one) follows its shortest path without waiting: optimal.
  return finish("greedy store-and-forward, shortest paths, farthest first",
                detail::greedy_schedule(g, m, task.packets, forwarding), g, m, task, task.packets.size() <= 1);
}

SlotAlgorithmResult greedy_trees(const VirtualNetwork& g, LinkModel m, const TaskInstance& task) {
  const bool binomial = (g.kind() == NetworkKind::complete || g.kind() == NetworkKind::hypercube) &&
                        m.ports == Ports::one_port;
  const detail::TreeForwarding forwarding(g, task.packets, binomial);
  return finish(binomial ? "greedy forwarding on binomial trees" : "greedy forwarding on BFS trees",
                detail::greedy_schedule(g, m, task.packets, forwarding), g, m, task, false);
}

constexpr SlotAlgorithmEntry kEntries[] = {
    // Complete graph, all-port: every packet straight to its destination.
    {Task::one_to_one, is_complete, direct}, {Task::permutation, is_complete, direct},
    {Task::snb, complete_all_port, direct}, {Task::sna, complete_all_port, direct},
    {Task::ssnb, complete_all_port, direct}, {Task::ssna, complete_all_port, direct},
    {Task::sns, complete_all_port, direct}, {Task::sng, complete_all_port, direct},
    {Task::ssns, complete_all_port, direct}, {Task::ssng, complete_all_port, direct},
    {Task::mnb, complete_all_port, direct}, {Task::pmnb, complete_all_port, direct},
    {Task::pmna, complete_all_port, direct}, {Task::te, complete_all_port, direct},
    {Task::pmns, complete_all_port, direct}, {Task::pmng, complete_all_port, direct},
    // Complete graph, one-port (the real machine).
    {Task::snb, complete_one_port, binomial}, {Task::ssnb, complete_one_port, binomial},
    {Task::sna, complete_one_port, by_duality<binomial>}, {Task::ssna, complete_one_port, by_duality<binomial>},
    {Task::sns, complete_one_port, sequential}, {Task::ssns, complete_one_port, sequential},
    {Task::sng, complete_one_port, by_duality<sequential>}, {Task::ssng, complete_one_port, by_duality<sequential>},
    {Task::mnb, complete_one_port, shifted}, {Task::te, complete_one_port, shifted},
    {Task::pmns, complete_one_port, shifted}, {Task::pmng, complete_one_port, by_duality<shifted>},
    // Hypercube, one-port: the binomial tree is a spanning tree of the cube.
    {Task::snb, hypercube_one_port, binomial}, {Task::ssnb, hypercube_one_port, binomial},
    {Task::sna, hypercube_one_port, by_duality<binomial>}, {Task::ssna, hypercube_one_port, by_duality<binomial>},
    // Hypercube and torus, all-port full duplex: TE as an isotropic task, in exactly h slots.
    {Task::te, lattice_all_port_full, isotropic_optimal},
    // Any network, all-port: PMNB / PMNA on edge-disjoint spanning trees.
    {Task::pmnb, all_port, pmnb_on_trees}, {Task::pmna, all_port, pmna_on_trees},
    // Any network, any link model.
    {Task::snb, nullptr, tree}, {Task::ssnb, nullptr, tree},
    {Task::sna, nullptr, by_duality<tree>}, {Task::ssna, nullptr, by_duality<tree>},
    {Task::one_to_one, nullptr, greedy_routed}, {Task::permutation, nullptr, greedy_routed},
    {Task::sns, nullptr, greedy_routed}, {Task::ssns, nullptr, greedy_routed},
    {Task::sng, nullptr, by_duality<greedy_routed>}, {Task::ssng, nullptr, by_duality<greedy_routed>},
    {Task::te, nullptr, greedy_routed}, {Task::pmns, nullptr, greedy_routed},
    {Task::pmng, nullptr, by_duality<greedy_routed>},
    {Task::mnb, nullptr, greedy_trees}, {Task::pmnb, nullptr, greedy_trees},
    {Task::pmna, nullptr, by_duality<greedy_trees>},
};

}  // namespace

std::span<const SlotAlgorithmEntry> slot_algorithms() noexcept { return kEntries; }

SlotAlgorithmResult route(const VirtualNetwork& network, LinkModel model, const TaskInstance& task) {
  if (task.packets.nodes() != network.size()) {
    throw std::invalid_argument("route: the task is over " + std::to_string(task.packets.nodes()) + " nodes, " +
                                network.name() + " has " + std::to_string(network.size()));
  }
  for (const auto& e : kEntries) {
    if (e.task == task.task && (!e.applies || e.applies(network, model))) return e.run(network, model, task);
  }
  throw std::invalid_argument("route: no slot algorithm for " + std::string(task_name(task.task)) + " on " +
                              network.name() + " under " + to_string(model));
}

}  // namespace switchyard::primitives
