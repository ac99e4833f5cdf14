// The registry of slot algorithms: for each task, the first entry whose
// applies() accepts the network and link model runs. Specialised algorithms
// come first, the general ones (any network, any link model) last, so every
// task has one. To add an algorithm, add its entry above the general ones.
#include <stdexcept>
#include <string>

#include "slot_support.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/primitives/isotropic.hpp"
#include "switchyard/primitives/pmnb.hpp"

namespace switchyard::primitives {

std::string_view bound_kind_name(BoundKind kind) noexcept {
  switch (kind) {
    case BoundKind::lower:
      return "lower bound";
    case BoundKind::upper:
      return "upper bound";
    case BoundKind::optimum:
      return "optimum";
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
TaskKind forward_task(TaskKind t) {
  switch (t) {
    case TaskKind::sna:
      return TaskKind::snb;
    case TaskKind::ssna:
      return TaskKind::ssnb;
    case TaskKind::sng:
      return TaskKind::sns;
    case TaskKind::ssng:
      return TaskKind::ssns;
    case TaskKind::pmna:
      return TaskKind::pmnb;
    case TaskKind::pmng:
      return TaskKind::pmns;
    default:
      return t;
  }
}

TaskInstance forward_instance(const TaskInstance& task) {
  TaskInstance f;
  f.task = forward_task(task.task);
  f.root = task.root;
  f.active = task.active;
  f.packets = PacketSet(task.packets.nodes(), false);
  for (PacketId p = 0; p < task.packets.size(); ++p)
    f.packets.add(task.packets.destinations(p), task.packets.origins(p));
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
  const bool optimal = g.kind() == NetworkKind::complete || task.task == TaskKind::snb;
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
  // Binomial trees: the one-port optimum per packet on the complete graph and
  // the cube; all-port on the cube, their dimensions rotated per origin so the
  // trees of many origins load every dimension.
  using detail::TreeShape;
  const bool one_port = m.ports == Ports::one_port;
  const TreeShape shape = g.kind() == NetworkKind::hypercube
                              ? (one_port ? TreeShape::binomial : TreeShape::rotated_binomial)
                          : g.kind() == NetworkKind::complete && one_port ? TreeShape::binomial
                                                                          : TreeShape::bfs;
  const detail::TreeForwarding forwarding(g, task.packets, shape);
  return finish(shape == TreeShape::bfs        ? "greedy forwarding on BFS trees"
                : shape == TreeShape::binomial ? "greedy forwarding on binomial trees"
                                               : "greedy forwarding on dimension-rotated binomial trees",
                detail::greedy_schedule(g, m, task.packets, forwarding), g, m, task, false);
}

constexpr SlotAlgorithmEntry kEntries[] = {
    // Complete graph, all-port: every packet straight to its destination.
    {TaskKind::one_to_one, is_complete, direct},
    {TaskKind::permutation, is_complete, direct},
    {TaskKind::snb, complete_all_port, direct},
    {TaskKind::sna, complete_all_port, direct},
    {TaskKind::ssnb, complete_all_port, direct},
    {TaskKind::ssna, complete_all_port, direct},
    {TaskKind::sns, complete_all_port, direct},
    {TaskKind::sng, complete_all_port, direct},
    {TaskKind::ssns, complete_all_port, direct},
    {TaskKind::ssng, complete_all_port, direct},
    {TaskKind::mnb, complete_all_port, direct},
    {TaskKind::pmnb, complete_all_port, direct},
    {TaskKind::pmna, complete_all_port, direct},
    {TaskKind::te, complete_all_port, direct},
    {TaskKind::pmns, complete_all_port, direct},
    {TaskKind::pmng, complete_all_port, direct},
    // Complete graph, one-port (the real machine).
    {TaskKind::snb, complete_one_port, binomial},
    {TaskKind::ssnb, complete_one_port, binomial},
    {TaskKind::sna, complete_one_port, by_duality<binomial>},
    {TaskKind::ssna, complete_one_port, by_duality<binomial>},
    {TaskKind::sns, complete_one_port, sequential},
    {TaskKind::ssns, complete_one_port, sequential},
    {TaskKind::sng, complete_one_port, by_duality<sequential>},
    {TaskKind::ssng, complete_one_port, by_duality<sequential>},
    {TaskKind::mnb, complete_one_port, shifted},
    {TaskKind::te, complete_one_port, shifted},
    {TaskKind::pmns, complete_one_port, shifted},
    {TaskKind::pmng, complete_one_port, by_duality<shifted>},
    // Hypercube, one-port: the binomial tree is a spanning tree of the cube.
    {TaskKind::snb, hypercube_one_port, binomial},
    {TaskKind::ssnb, hypercube_one_port, binomial},
    {TaskKind::sna, hypercube_one_port, by_duality<binomial>},
    {TaskKind::ssna, hypercube_one_port, by_duality<binomial>},
    // Hypercube and torus, all-port full duplex: TE as an isotropic task, in exactly h slots.
    {TaskKind::te, lattice_all_port_full, isotropic_optimal},
    // Any network, all-port: PMNB / PMNA on edge-disjoint spanning trees.
    {TaskKind::pmnb, all_port, pmnb_on_trees},
    {TaskKind::pmna, all_port, pmna_on_trees},
    // Any network, any link model.
    {TaskKind::snb, nullptr, tree},
    {TaskKind::ssnb, nullptr, tree},
    {TaskKind::sna, nullptr, by_duality<tree>},
    {TaskKind::ssna, nullptr, by_duality<tree>},
    {TaskKind::one_to_one, nullptr, greedy_routed},
    {TaskKind::permutation, nullptr, greedy_routed},
    {TaskKind::sns, nullptr, greedy_routed},
    {TaskKind::ssns, nullptr, greedy_routed},
    {TaskKind::sng, nullptr, by_duality<greedy_routed>},
    {TaskKind::ssng, nullptr, by_duality<greedy_routed>},
    {TaskKind::te, nullptr, greedy_routed},
    {TaskKind::pmns, nullptr, greedy_routed},
    {TaskKind::pmng, nullptr, by_duality<greedy_routed>},
    {TaskKind::mnb, nullptr, greedy_trees},
    {TaskKind::pmnb, nullptr, greedy_trees},
    {TaskKind::pmna, nullptr, by_duality<greedy_trees>},
};

}  // namespace

std::span<const SlotAlgorithmEntry> slot_algorithms() noexcept { return kEntries; }

SlotAlgorithmResult route(const VirtualNetwork& network, LinkModel model, const TaskInstance& task) {
  if (task.packets.nodes() != network.size()) {
    throw InvalidArgument("route: the task is over " + std::to_string(task.packets.nodes()) + " nodes, " +
                          network.name() + " has " + std::to_string(network.size()));
  }
  for (const auto& e : kEntries) {
    if (e.task == task.task && (!e.applies || e.applies(network, model))) return e.run(network, model, task);
  }
  throw InvalidArgument("route: no slot algorithm for " + std::string(task_name(task.task)) + " on " + network.name() +
                        " under " + to_string(model));
}

}  // namespace switchyard::primitives
