#include "switchyard/primitives/slot_task.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

namespace {

constexpr std::array<std::string_view, 16> kNames = {"one-to-one", "snb",  "sna",  "ssnb",        "ssna", "sns",
                                                     "sng",        "ssns", "ssng", "permutation", "mnb",  "pmnb",
                                                     "pmna",       "te",   "pmns", "pmng"};

// Packets and deliveries beyond these do not fit in memory with their schedule:
// refused up front (a TE stops near 11585 nodes, an MNB near 16384).
constexpr std::int64_t kMaxPackets = std::int64_t{1} << 27;
constexpr std::int64_t kMaxDeliveries = std::int64_t{1} << 28;

void require_fits(TaskKind task, Node n, std::int64_t packets, std::int64_t deliveries) {
  if (packets > kMaxPackets || deliveries > kMaxDeliveries) {
    throw InvalidArgument(std::string(task_name(task)) + " on " + std::to_string(n) + " nodes has " +
                          std::to_string(packets) + " packets and " + std::to_string(deliveries) +
                          " deliveries: more than fits in memory (at most " + std::to_string(kMaxPackets) +
                          " packets, " + std::to_string(kMaxDeliveries) + " deliveries)");
  }
}

// The active set: `fraction` of the candidates (at least one when there are
// any), drawn with the seed, sorted.
std::vector<Node> draw_active(std::vector<Node> candidates, double fraction, std::uint64_t seed) {
  if (candidates.empty()) return {};
  std::mt19937_64 rng(seed);
  std::shuffle(candidates.begin(), candidates.end(), rng);
  const auto count = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::llround(fraction * static_cast<double>(candidates.size()))), 1, candidates.size());
  candidates.resize(count);
  std::sort(candidates.begin(), candidates.end());
  return candidates;
}

std::vector<Node> all_but(Node n, Node skip) {
  std::vector<Node> out;
  out.reserve(static_cast<std::size_t>(n));
  for (Node v = 0; v < n; ++v) {
    if (v != skip) out.push_back(v);
  }
  return out;
}

Node farthest_from(const VirtualNetwork& g, Node root) {
  const auto d = g.distances_from(root);
  return static_cast<Node>(std::max_element(d.begin(), d.end()) - d.begin());
}

// Personalized packets: one per (origin, destination) pair with origin in
// `from` and destination in `to`, origin-major.
void add_pairs(PacketSet& packets, std::span<const Node> from, std::span<const Node> to) {
  for (Node o : from) {
    for (Node d : to) {
      if (o != d) packets.add(o, d);
    }
  }
}

}  // namespace

std::string_view task_name(TaskKind task) noexcept { return kNames[static_cast<std::size_t>(task)]; }

std::optional<TaskKind> parse_task(std::string_view name) noexcept {
  for (TaskKind t : kAllTasks) {
    if (task_name(t) == name) return t;
  }
  return std::nullopt;
}

bool task_combines(TaskKind task) noexcept {
  return task == TaskKind::sna || task == TaskKind::ssna || task == TaskKind::pmna;
}

bool task_uses_active_set(TaskKind task) noexcept {
  switch (task) {
    case TaskKind::ssnb:
    case TaskKind::ssna:
    case TaskKind::ssns:
    case TaskKind::ssng:
    case TaskKind::pmnb:
    case TaskKind::pmna:
    case TaskKind::pmns:
    case TaskKind::pmng:
      return true;
    default:
      return false;
  }
}

namespace {

bool selective(TaskKind task) {
  return task == TaskKind::ssnb || task == TaskKind::ssna || task == TaskKind::ssns || task == TaskKind::ssng;
}

// Packets and deliveries the task will have, to refuse it before building.
std::pair<std::int64_t, std::int64_t> task_size(const TaskInstance& t, Node n) {
  const std::int64_t a = static_cast<std::int64_t>(t.active.size());
  const std::int64_t m = n - 1;
  switch (t.task) {
    case TaskKind::mnb:
      return {n, std::int64_t{n} * m};
    case TaskKind::pmnb:
      return {a, a * m};
    case TaskKind::pmna:
      return {a, a * m};
    case TaskKind::te:
      return {std::int64_t{n} * m, std::int64_t{n} * m};
    case TaskKind::pmns:
    case TaskKind::pmng:
      return {a * m, a * m};
    default:
      return {n, n};
  }
}

void add_packets(TaskInstance& t, const VirtualNetwork& g) {
  const Node n = g.size();
  const Node r = t.root;
  const auto others = all_but(n, r);
  const auto everyone = all_but(n, -1);
  auto& p = t.packets;
  switch (t.task) {
    case TaskKind::one_to_one:
      if (n > 1) p.add(r, t.active[0]);
      break;
    case TaskKind::snb:
      if (n > 1) p.add(std::span(&r, 1), others);
      break;
    case TaskKind::sna:
      if (n > 1) p.add(others, std::span(&r, 1));
      break;
    case TaskKind::ssnb:
      if (!t.active.empty()) p.add(std::span(&r, 1), t.active);
      break;
    case TaskKind::ssna:
      if (!t.active.empty()) p.add(t.active, std::span(&r, 1));
      break;
    case TaskKind::sns:
      add_pairs(p, std::span(&r, 1), others);
      break;
    case TaskKind::sng:
      add_pairs(p, others, std::span(&r, 1));
      break;
    case TaskKind::ssns:
      add_pairs(p, std::span(&r, 1), t.active);
      break;
    case TaskKind::ssng:
      add_pairs(p, t.active, std::span(&r, 1));
      break;
    case TaskKind::permutation:
      for (Node v = 0; v < n; ++v) {
        if (t.target[v] != v) p.add(v, t.target[v]);
      }
      break;
    case TaskKind::mnb:
    case TaskKind::pmnb:
      for (Node o : t.task == TaskKind::mnb ? std::span<const Node>(everyone) : std::span<const Node>(t.active)) {
        if (n > 1) p.add(std::span(&o, 1), all_but(n, o));
      }
      break;
    case TaskKind::pmna:
      for (Node d : t.active) {
        if (n > 1) p.add(all_but(n, d), std::span(&d, 1));
      }
      break;
    case TaskKind::te:
      add_pairs(p, everyone, everyone);
      break;
    case TaskKind::pmns:
      add_pairs(p, t.active, everyone);
      break;
    case TaskKind::pmng:
      // Destination-major, so packet ids match PMNS's (origin-major), whose dual it is.
      for (Node d : t.active) {
        for (Node o : everyone) {
          if (o != d) p.add(o, d);
        }
      }
      break;
  }
}

}  // namespace

std::pair<std::int64_t, std::int64_t> task_size(TaskKind task, Node n, const TaskOptions& options) {
  // The active set's size, as draw_active sizes it, of the candidates make_task gives it.
  const auto drawn = [&](std::int64_t candidates) {
    if (candidates <= 0) return std::int64_t{0};
    return std::clamp<std::int64_t>(std::llround(options.active_fraction * static_cast<double>(candidates)), 1,
                                    candidates);
  };
  const std::int64_t m = n - 1;
  const std::int64_t a = selective(task) ? drawn(m) : task_uses_active_set(task) ? drawn(n) : 0;
  switch (task) {
    case TaskKind::one_to_one:
    case TaskKind::sna:
      return {m > 0, m > 0};
    case TaskKind::snb:
      return {m > 0, m};
    case TaskKind::ssnb:
      return {a > 0, a};
    case TaskKind::ssna:
      return {a > 0, a > 0};
    case TaskKind::sns:
    case TaskKind::sng:
      return {m, m};
    case TaskKind::ssns:
    case TaskKind::ssng:
      return {a, a};
    case TaskKind::pmna:
      return {a, a};  // each combines n - 1 contributions into one delivery
    default: {  // the all-to-all tasks, and the permutation's bound
      TaskInstance t;
      t.task = task;
      t.active.assign(static_cast<std::size_t>(a), Node{0});
      return task_size(t, n);
    }
  }
}

TaskInstance make_task(TaskKind task, const VirtualNetwork& network, const TaskOptions& options) {
  const Node n = network.size();
  if (!network.contains(options.root)) {
    throw InvalidArgument("make_task: root " + std::to_string(options.root) + " is outside 0.." +
                          std::to_string(n - 1));
  }
  if (!(options.active_fraction >= 0.0 && options.active_fraction <= 1.0)) {
    throw InvalidArgument("make_task: active fraction " + std::to_string(options.active_fraction) +
                          " is outside [0, 1]");
  }
  TaskInstance t;
  t.task = task;
  t.root = options.root;
  t.packets = PacketSet(n, task_combines(task));
  if (task == TaskKind::one_to_one) t.active = {farthest_from(network, t.root)};
  if (selective(task)) t.active = draw_active(all_but(n, t.root), options.active_fraction, options.seed);
  if (task_uses_active_set(task) && !selective(task))
    t.active = draw_active(all_but(n, -1), options.active_fraction, options.seed);
  if (task == TaskKind::permutation) {
    t.target.resize(static_cast<std::size_t>(n));
    std::iota(t.target.begin(), t.target.end(), Node{0});
    std::mt19937_64 rng(options.seed);
    std::shuffle(t.target.begin(), t.target.end(), rng);
  }
  const auto [packets, deliveries] = task_size(t, n);
  require_fits(task, n, packets, deliveries);
  add_packets(t, network);
  return t;
}

}  // namespace switchyard::primitives
