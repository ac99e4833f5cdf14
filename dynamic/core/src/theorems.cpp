#include "switchyard/dynamic/theorems.hpp"

#include <limits>

namespace switchyard::dynamic {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}

double static_to_dynamic_limit(double x, std::int32_t nodes) { return 1.0 / (nodes * x); }

double static_to_dynamic_bound(double x, double v, std::int32_t nodes, double rate) {
  const double rho = rate * nodes * x;
  if (rho >= 1) return kInfinity;
  const double w = rho * x / (2 * (1 - rho)) + v / 2 + v / (1 - rho);
  return w + x + std::min(w - v, rho * w);
}

double indirect_limit(int trees, std::int32_t nodes) { return static_cast<double>(trees) / nodes; }

double indirect_bound(int trees, std::int32_t nodes, double mean_tree_diameter, int diameter, double rate) {
  const double rho = rate * nodes / trees;
  if (rho >= 1) return kInfinity;
  return (rho * rho - rho + 2) / (2 * trees * (1 - rho)) +
         (mean_tree_diameter + 2.0 * diameter) * (1 + rho) * (3 - rho) / (2 * (1 - rho));
}

double indirect_light_load_bound(int trees, double mean_tree_diameter, int diameter) {
  return 1.5 * mean_tree_diameter + 3.0 * diameter + 1.0 / trees;
}

DirectBroadcastTheory::DirectBroadcastTheory(std::int32_t nodes, const primitives::EdgeDisjointTrees& trees)
    : nodes_(nodes), trees_(trees.count()), piece_count_(static_cast<std::size_t>(nodes), 0) {
  double distance_sum = 0;
  for (const auto& tree : trees.trees) {
    // Root the tree at 0: removing the link (parent, child) splits it into the
    // child's subtree (size c) and the rest (N - c). Each such piece is one
    // n_{j,q}(s): c at s = parent, N - c at s = child; and c (N - c) ordered
    // pairs of nodes, each way, are joined through that link.
    const auto adjacency = primitives::tree_adjacency(nodes, tree);
    std::vector<std::int32_t> parent(static_cast<std::size_t>(nodes), -1), order{0};
    parent[0] = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      for (auto w : adjacency[static_cast<std::size_t>(order[i])]) {
        if (parent[static_cast<std::size_t>(w)] < 0) {
          parent[static_cast<std::size_t>(w)] = order[i];
          order.push_back(w);
        }
      }
    }
    std::vector<std::int64_t> size(static_cast<std::size_t>(nodes), 1);
    for (std::size_t i = order.size(); i-- > 1;) {
      const auto v = static_cast<std::size_t>(order[i]);
      size[static_cast<std::size_t>(parent[v])] += size[v];
      ++piece_count_[static_cast<std::size_t>(size[v])];
      ++piece_count_[static_cast<std::size_t>(nodes - size[v])];
      distance_sum += 2.0 * static_cast<double>(size[v]) * static_cast<double>(nodes - size[v]);
    }
  }
  mean_distance_ = distance_sum / (static_cast<double>(trees_) * nodes * (nodes - 1.0));
}

double DirectBroadcastTheory::limit() const noexcept { return static_cast<double>(trees_) / (nodes_ - 1); }

double DirectBroadcastTheory::piece_sum(double rate) const {
  double sum = 0;
  for (std::size_t n = 1; n < piece_count_.size(); ++n) {
    if (piece_count_[n] == 0) continue;
    const double size = static_cast<double>(n);
    sum += static_cast<double>(piece_count_[n]) * size * size / (1 - size * rate / trees_);
  }
  return sum;
}

double DirectBroadcastTheory::reception_delay(double rate) const {
  if (rate >= limit()) return kInfinity;
  return 0.5 + mean_distance_ + (rate / trees_) / (2.0 * trees_ * nodes_ * (nodes_ - 1.0)) * piece_sum(rate);
}

double DirectBroadcastTheory::reception_delay_as_printed(double rate) const {
  if (rate >= limit()) return kInfinity;
  return 0.5 + mean_distance_ + rate / (2.0 * trees_ * nodes_ * (nodes_ - 1.0)) * piece_sum(rate);
}

}  // namespace switchyard::dynamic
