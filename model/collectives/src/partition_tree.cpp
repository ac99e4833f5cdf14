#include "partition_tree.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "switchyard/errors.hpp"
#include "switchyard/model/collectives/operation.hpp"

namespace switchyard::model::collectives::detail {
namespace {

std::uint32_t ceil_sqrt(std::uint32_t n) {
  auto r = static_cast<std::uint32_t>(std::sqrt(static_cast<double>(n)));
  while (static_cast<std::uint64_t>(r) * r < n) ++r;
  while (r > 1 && static_cast<std::uint64_t>(r - 1) * (r - 1) >= n) --r;
  return r;
}

struct Range {
  std::uint32_t start, size;
  TreeShape::Kind kind;
};

// The sub-ranges of `r`, in order; the first holds r's leader.
std::vector<Range> split(const Range& r, double gamma) {
  std::vector<Range> out;
  auto cut = [&](std::uint32_t width, TreeShape::Kind child) {
    for (std::uint32_t s = 0; s < r.size; s += width) out.push_back({r.start + s, std::min(width, r.size - s), child});
  };
  switch (r.kind) {
    case TreeShape::kDirect:
      cut(1, TreeShape::kDirect);
      break;
    case TreeShape::kRows:
      cut(ceil_sqrt(r.size), TreeShape::kDirect);
      break;
    case TreeShape::kGroups:
      cut(ceil_sqrt(r.size), TreeShape::kRows);
      break;
    case TreeShape::kGamma: {
      const double wanted = std::ceil(gamma * r.size - 1e-9);
      const auto keep = static_cast<std::uint32_t>(std::clamp(wanted, 1.0, static_cast<double>(r.size - 1)));
      out.push_back({r.start, keep, TreeShape::kGamma});
      out.push_back({r.start + keep, r.size - keep, TreeShape::kGamma});
      break;
    }
  }
  return out;
}

std::uint32_t depth_of(const Range& r, double gamma) {
  if (r.size <= 1) return 0;
  std::uint32_t deepest = 0;
  for (const Range& c : split(r, gamma)) deepest = std::max(deepest, depth_of(c, gamma));
  return deepest + 1;
}

std::uint32_t tree_depths(TreeShape shape, std::uint32_t n) {
  if (shape.kind != TreeShape::kGamma) return depth_of({0, n, shape.kind}, shape.gamma);
  // Uneven halves: depth(n) = 1 + max(depth(keep), depth(n - keep)), by dynamic programming.
  std::vector<std::uint32_t> depth(n + 1, 0);
  for (std::uint32_t m = 2; m <= n; ++m) {
    const auto parts = split({0, m, TreeShape::kGamma}, shape.gamma);
    depth[m] = 1 + std::max(depth[parts[0].size], depth[parts[1].size]);
  }
  return depth[n];
}

}  // namespace

TreeShape tree_shape(std::string_view algorithm) {
  if (algorithm == "1-lev-dir") return {TreeShape::kDirect, 0.5};
  if (algorithm == "2-lev-rec") return {TreeShape::kRows, 0.5};
  if (algorithm == "3-lev-sq") return {TreeShape::kGroups, 0.5};
  if (algorithm == "logp-lev-sq") return {TreeShape::kGamma, 0.5};
  if (const auto g = rec_gamma(algorithm)) return {TreeShape::kGamma, *g};
  throw InvalidArgument("switchyard: '" + std::string(algorithm) + "' is not a one-to-all / all-to-one tree algorithm");
}

TreeRole tree_role(TreeShape shape, std::uint32_t processes, std::uint32_t rank) {
  TreeRole role;
  role.depths = tree_depths(shape, processes);
  role.color.assign(role.depths, -1);
  role.range = processes;
  Range node{0, processes, shape.kind};
  for (std::uint32_t depth = 0; node.size > 1; ++depth) {
    const std::vector<Range> parts = split(node, shape.gamma);
    // Halving's sub-machine is the whole range being cut, the others' the leaders of the parts.
    const bool whole = shape.kind == TreeShape::kGamma;
    if (whole) role.color[depth] = node.start;
    for (std::uint32_t i = 0; i < parts.size(); ++i) {
      const Range& c = parts[i];
      if (node.start == rank && i > 0)
        role.children.push_back({depth, c.start, c.size, whole ? c.start - node.start : i});
      if (rank < c.start || rank >= c.start + c.size) continue;
      if (c.start == rank) {
        if (!whole) role.color[depth] = node.start;
        if (i > 0) {
          role.recv_depth = static_cast<int>(depth);
          role.range = c.size;
        }
      }
    }
    node = *std::find_if(parts.begin(), parts.end(),
                         [&](const Range& c) { return rank >= c.start && rank < c.start + c.size; });
  }
  return role;
}

}  // namespace switchyard::model::collectives::detail
