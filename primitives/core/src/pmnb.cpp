#include "switchyard/primitives/pmnb.hpp"

#include "slot_support.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

double PmnbPlan::upper_bound() const noexcept {
  return static_cast<double>(broadcast_packets) / trees + mean_tree_diameter + 2.0 * diameter;
}
double PmnbPlan::lower_bound_full() const noexcept {
  return std::max(static_cast<double>(broadcast_packets) / (2.0 * trees), static_cast<double>(diameter));
}
double PmnbPlan::lower_bound_half() const noexcept {
  return std::max(static_cast<double>(broadcast_packets) / trees, static_cast<double>(diameter));
}

namespace {

// Every node of 0 .. n-1 but v.
std::vector<Node> all_nodes_but(Node n, Node v) {
  std::vector<Node> out;
  for (Node w = 0; w < n; ++w) {
    if (w != v) out.push_back(w);
  }
  return out;
}

}  // namespace

PacketSet pmnb_packets(Node n, std::span<const Node> broadcasters) {
  PacketSet packets(n, false);
  for (Node s : broadcasters) packets.add(std::span<const Node>(&s, 1), all_nodes_but(n, s));
  return packets;
}

PacketSet pmna_packets(Node n, std::span<const Node> collectors) {
  PacketSet packets(n, true);
  for (Node d : collectors) packets.add(all_nodes_but(n, d), std::span<const Node>(&d, 1));
  return packets;
}

namespace {

// The breadth-first spanning tree the prefix runs on, rooted at a centre of
// the network (any node of the vertex-transitive kinds), with each node's
// depth and height (0 at a leaf).
struct PrefixTree {
  detail::RootedTree tree;
  std::vector<int> depth;
  std::vector<int> height;
  int depth_max = 0;
  std::span<const Node> children(Node v) const {
    return {tree.children.data() + tree.child_begin[static_cast<std::size_t>(v)],
            tree.children.data() + tree.child_begin[static_cast<std::size_t>(v) + 1]};
  }
};

PrefixTree prefix_tree(const VirtualNetwork& g) {
  const Node n = g.size();
  Node root = 0;
  if (g.kind() == NetworkKind::graph || g.kind() == NetworkKind::tree) {
    int best = n;
    for (Node v = 0; v < n; ++v) {
      const auto d = g.distances_from(v);
      const int eccentricity = *std::max_element(d.begin(), d.end());
      if (eccentricity < best) {
        best = eccentricity;
        root = v;
      }
    }
  }
  PrefixTree t{detail::bfs_tree(g, root), std::vector<int>(static_cast<std::size_t>(n), 0),
               std::vector<int>(static_cast<std::size_t>(n), 0), 0};
  for (Node v : t.tree.order) {
    const Node p = t.tree.parent[static_cast<std::size_t>(v)];
    if (p >= 0) t.depth[static_cast<std::size_t>(v)] = t.depth[static_cast<std::size_t>(p)] + 1;
  }
  for (auto it = t.tree.order.rbegin(); it != t.tree.order.rend(); ++it) {
    const Node p = t.tree.parent[static_cast<std::size_t>(*it)];
    if (p >= 0) {
      t.height[static_cast<std::size_t>(p)] =
          std::max(t.height[static_cast<std::size_t>(p)], t.height[static_cast<std::size_t>(*it)] + 1);
    }
  }
  t.depth_max = t.height[static_cast<std::size_t>(root)];
  return t;
}

// n_j: the smallest finishing level tau with sum_j max(0, tau - L_j + 1) >= M,
// then the surplus taken from the trees of largest diameter.
std::vector<std::int64_t> packets_per_tree(std::int64_t m, std::span<const int> diameters) {
  const auto k = static_cast<std::int64_t>(diameters.size());
  std::vector<std::int64_t> n(diameters.size(), 0);
  if (m == 0) return n;
  const auto fill = [&](std::int64_t tau) {
    std::int64_t sum = 0;
    for (int l : diameters) sum += std::max<std::int64_t>(0, tau - l + 1);
    return sum;
  };
  std::int64_t lo = 0, hi = m + *std::max_element(diameters.begin(), diameters.end()) + 1;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (fill(mid) >= m)
      hi = mid;
    else
      lo = mid + 1;
  }
  std::int64_t surplus = fill(lo) - m;
  for (std::size_t j = 0; j < diameters.size(); ++j) n[j] = std::max<std::int64_t>(0, lo - diameters[j] + 1);
  std::vector<std::size_t> widest(diameters.size());
  std::iota(widest.begin(), widest.end(), std::size_t{0});
  std::stable_sort(widest.begin(), widest.end(), [&](auto a, auto b) { return diameters[a] > diameters[b]; });
  for (std::int64_t i = 0; surplus > 0; i = (i + 1) % k) {
    if (n[widest[static_cast<std::size_t>(i)]] > 0) {
      --n[widest[static_cast<std::size_t>(i)]];
      --surplus;
    }
  }
  return n;
}

// The tree of each packet, as phase 1 lets each node compute it locally: the
// packets of node v hold the ranks offset(v) .. offset(v) + count(v) - 1,
// offsets in the prefix tree's preorder, and rank q goes to the tree whose run
// of n_j ranks holds q.
std::vector<int> choose_trees(const PrefixTree& t, std::span<const Node> sources,
                              std::span<const std::int64_t> per_tree) {
  std::vector<std::int64_t> count(t.depth.size(), 0);
  for (Node s : sources) ++count[static_cast<std::size_t>(s)];
  std::vector<std::int64_t> offset(t.depth.size(), 0);
  std::int64_t next = 0;
  std::vector<Node> stack{t.tree.root};
  while (!stack.empty()) {
    const Node v = stack.back();
    stack.pop_back();
    offset[static_cast<std::size_t>(v)] = next;
    next += count[static_cast<std::size_t>(v)];
    const auto c = t.children(v);
    stack.insert(stack.end(), c.rbegin(), c.rend());
  }
  std::vector<std::int64_t> run_end(per_tree.size());
  std::partial_sum(per_tree.begin(), per_tree.end(), run_end.begin());
  std::vector<int> tree_of(sources.size());
  for (std::size_t p = 0; p < sources.size(); ++p) {
    const std::int64_t rank = offset[static_cast<std::size_t>(sources[p])]++;
    tree_of[p] = static_cast<int>(std::upper_bound(run_end.begin(), run_end.end(), rank) - run_end.begin());
  }
  return tree_of;
}

}  // namespace

struct PmnbPlanner::State {
  const VirtualNetwork& network;
  PrefixTree prefix;
  std::vector<int> diameters;
  GreedyTreeForwarding forwarding;
};

PmnbPlanner::PmnbPlanner(const VirtualNetwork& g, const EdgeDisjointTrees& trees, Duplex duplex) {
  if (trees.count() == 0) throw InvalidArgument("pmnb/pmna plan: no spanning tree to broadcast on");
  check_edge_disjoint_spanning_trees(g, trees);
  std::vector<int> diameters;
  for (const auto& tree : trees.trees) diameters.push_back(tree_diameter(g.size(), tree));
  state_ = std::make_unique<State>(
      State{g, prefix_tree(g), std::move(diameters), GreedyTreeForwarding(g.size(), trees, duplex)});
}

PmnbPlanner::~PmnbPlanner() = default;
PmnbPlanner::PmnbPlanner(PmnbPlanner&&) noexcept = default;
PmnbPlanner& PmnbPlanner::operator=(PmnbPlanner&&) noexcept = default;

int PmnbPlanner::trees() const noexcept { return static_cast<int>(state_->diameters.size()); }
std::span<const int> PmnbPlanner::tree_diameters() const noexcept { return state_->diameters; }
double PmnbPlanner::mean_tree_diameter() const noexcept {
  return std::accumulate(state_->diameters.begin(), state_->diameters.end(), 0.0) / trees();
}
int PmnbPlanner::diameter() const { return state_->network.diameter(); }
std::int32_t parallel_prefix_slots(const VirtualNetwork& network) { return 2 * prefix_tree(network).depth_max; }

std::int32_t PmnbPlanner::prefix_slots() const noexcept { return 2 * state_->prefix.depth_max; }
GreedyTreeForwarding& PmnbPlanner::forwarding() noexcept { return state_->forwarding; }

std::vector<int> PmnbPlanner::choose_trees(std::span<const Node> sources) const {
  return primitives::choose_trees(state_->prefix, sources,
                                  packets_per_tree(static_cast<std::int64_t>(sources.size()), state_->diameters));
}

PmnbPlan PmnbPlanner::plan(const PacketSet& task, bool combining) {
  const VirtualNetwork& g = state_->network;
  const Node n = g.size();
  if (task.combining() != combining) {
    throw InvalidArgument(combining ? "pmna_plan: the packets must be combining"
                                    : "pmnb_plan: the packets must be copying");
  }
  if (task.nodes() != n) throw InvalidArgument("pmnb/pmna plan: the packets are for another network size");
  // The node each packet spreads from: its origin (PMNB) or destination (PMNA).
  std::vector<Node> sources(static_cast<std::size_t>(task.size()));
  for (PacketId p = 0; p < task.size(); ++p) {
    const auto ends = combining ? task.destinations(p) : task.origins(p);
    const auto others = combining ? task.origins(p) : task.destinations(p);
    if (static_cast<Node>(others.size()) != n - 1) {
      throw InvalidArgument("pmnb/pmna plan: packet " + std::to_string(p) + " does not reach every other node");
    }
    sources[static_cast<std::size_t>(p)] = ends[0];
  }
  PmnbPlan out;
  out.broadcast_packets = task.size();
  out.trees = trees();
  out.diameter = diameter();
  out.mean_tree_diameter = mean_tree_diameter();
  out.packets_per_tree = packets_per_tree(task.size(), state_->diameters);

  out.packets = PacketSet(n, combining);
  for (PacketId p = 0; p < task.size(); ++p) out.packets.add(task.origins(p), task.destinations(p));
  const PrefixTree& t = state_->prefix;
  const std::int32_t h = t.depth_max;
  out.prefix_slots = 2 * h;
  SlotScheduleBuilder builder;
  for (Node v = 0; v < n; ++v) {
    const Node p = t.tree.parent[static_cast<std::size_t>(v)];
    if (p < 0) continue;
    const PacketId count = out.packets.add(v, p);
    builder.add(t.height[static_cast<std::size_t>(v)], {v, p, count});
    const PacketId offset = out.packets.add(p, v);
    builder.add(h + t.depth[static_cast<std::size_t>(v)] - 1, {p, v, offset});
  }
  SlotSchedule phase;
  broadcast(sources, [&](std::int32_t slot, std::span<const Transmission> sent) {
    for (const auto& x : sent) phase.add(slot, x);
  });
  if (combining) phase = detail::reversed(phase);
  for (std::int32_t slot = 0; slot < phase.slots(); ++slot) {
    for (const auto& x : phase.slot(slot)) builder.add(out.prefix_slots + slot, x);
  }
  out.schedule = std::move(builder).build();
  return out;
}

PmnbPlan pmnb_plan(const VirtualNetwork& g, const PacketSet& packets, const EdgeDisjointTrees& trees, Duplex duplex) {
  return PmnbPlanner(g, trees, duplex).plan(packets, false);
}

PmnbPlan pmna_plan(const VirtualNetwork& g, const PacketSet& packets, const EdgeDisjointTrees& trees, Duplex duplex) {
  return PmnbPlanner(g, trees, duplex).plan(packets, true);
}

namespace {

SlotAlgorithmResult on_trees(const VirtualNetwork& g, LinkModel model, const TaskInstance& task, bool combining) {
  if (model.ports != Ports::all_port) {
    throw InvalidArgument("PMNB/PMNA on spanning trees: needs all-port, not " + to_string(model));
  }
  const auto trees = edge_disjoint_spanning_trees(g);
  auto p = PmnbPlanner(g, trees, model.duplex).plan(task.packets, combining);
  const bool full = model.duplex == Duplex::full;
  const auto ceiling = [](double x) { return static_cast<std::int64_t>(std::ceil(x - 1e-9)); };
  SlotAlgorithmResult out{
      std::to_string(p.trees) + " edge-disjoint spanning trees (" + trees.construction + "), prefix then greedy" +
          (combining ? ", reversed" : ""),
      std::move(p.schedule),
      {{BoundKind::upper, static_cast<std::int64_t>(std::floor(p.upper_bound() + 1e-9)), "M/k + Lbar + 2 delta"},
       {BoundKind::lower, ceiling(full ? p.lower_bound_full() : p.lower_bound_half()),
        full ? "max(M/2k, delta)" : "max(M/k, delta)"}},
      std::move(p.packets)};
  return out;
}

}  // namespace

SlotAlgorithmResult pmnb_on_trees(const VirtualNetwork& g, LinkModel model, const TaskInstance& task) {
  return on_trees(g, model, task, false);
}

SlotAlgorithmResult pmna_on_trees(const VirtualNetwork& g, LinkModel model, const TaskInstance& task) {
  return on_trees(g, model, task, true);
}

}  // namespace switchyard::primitives
