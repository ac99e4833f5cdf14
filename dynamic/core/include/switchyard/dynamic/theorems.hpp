#pragma once
// The theorems of Varvarigos sections 3.4 and 3.5, as numbers to set beside
// the measurements. Every rate is per node per slot, every delay in slots.
// A load at or beyond a bound's stability limit gives +infinity.
#include <cstdint>
#include <vector>

#include "switchyard/primitives/spanning_trees.hpp"

namespace switchyard::dynamic {

/// Static-to-dynamic theorem: an algorithm taking X M + V slots, repeated back
/// to back, is stable for λ < 1/(N X), and its mean delay 𝓣 <= W + X + min(W - V, ρ W)
/// with ρ = λ N X and W = ρ X / (2 (1 - ρ)) + V / 2 + V / (1 - ρ).
double static_to_dynamic_limit(double x, std::int32_t nodes);
/// The static-to-dynamic bound on the mean delay at `rate` (+infinity at or beyond the limit).
double static_to_dynamic_bound(double x, double v, std::int32_t nodes, double rate);

/// Indirect broadcasting theorem (PMNB on k edge-disjoint trees: X = 1/k,
/// V = Lbar + 2 delta): stable for λ < k/N, and
/// 𝓑 <= (ρ² - ρ + 2) / (2k (1 - ρ)) + (Lbar + 2δ)(1 + ρ)(3 - ρ) / (2 (1 - ρ)).
/// The paper prints ρ = k/N, a slip: the bound is W + X + ρW of the theorem
/// above with X = 1/k, so ρ = λ N X = λ N / k (the load, 0 at light load).
double indirect_limit(int trees, std::int32_t nodes);
/// The indirect broadcasting bound on 𝓑 at `rate`.
double indirect_bound(int trees, std::int32_t nodes, double mean_tree_diameter, int diameter, double rate);
/// Its light-load form, ρ -> 0: 1.5 Lbar + 3 delta + 1/k.
double indirect_light_load_bound(int trees, double mean_tree_diameter, int diameter);

/// Direct broadcasting theorem on k edge-disjoint trees: stable iff λ < k/(N - 1),
/// and the mean reception delay is exactly, as printed,
/// 𝓡 = 1/2 + lbar + λ / (2 k N (N - 1)) Σ_s Σ_j Σ_q n_{j,q}(s)² / (1 - n_{j,q}(s) λ / k),
/// n_{j,q}(s) the sizes of the pieces tree j falls into when s is removed, and
/// lbar the mean distance between two nodes in a tree, over nodes and trees.
/// As printed the queueing term is k times what the scheme measures whenever
/// k > 1 (hypercubes, tori, complete graphs, 0.1 to 0.8 of the limit: ratios
/// 1.97 to 2.01 for k = 2, 8.0 for k = 8), while for k = 1 (a ring, a tree) the
/// two agree within the sampling error. The term with the per-tree rate λ/k in
/// place of λ in the factor before the sum (λ / (2 k² N (N - 1)) Σ ...), the
/// form the denominator already uses, is what the measurements match: it is
/// reception_delay(); reception_delay_as_printed() is the paper's text.
class DirectBroadcastTheory {
 public:
  /// Sizes the pieces each tree falls into when each node is removed.
  DirectBroadcastTheory(std::int32_t nodes, const primitives::EdgeDisjointTrees& trees);
  double limit() const noexcept;  ///< k/(N - 1)
  double mean_tree_distance() const noexcept { return mean_distance_; }  ///< lbar
  double reception_delay(double rate) const;  ///< 𝓡 with the per-tree rate λ/k, what the measurements match
  double reception_delay_as_printed(double rate) const;  ///< 𝓡 as the paper prints it

 private:
  double piece_sum(double rate) const;  ///< Σ n² / (1 - n λ / k)
  std::int32_t nodes_;
  int trees_;
  double mean_distance_ = 0;
  /// piece_count_[n]: how many (s, j, q) have n_{j,q}(s) = n.
  std::vector<std::int64_t> piece_count_;
};

}  // namespace switchyard::dynamic
