#pragma once
// Internal: the process sets the engines work on, and the pieces a circular
// range of ranks or tree nodes splits into in a caller's buffer.

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "switchyard/primitives/binomial_tree.hpp"
#include "switchyard/types.hpp"

namespace switchyard::primitives::detail {

// A sorted set of ranks: an explicit list, or all n ranks of the communicator.
struct MemberList {
  std::span<const Rank> list;
  Rank n = 0;
  bool all = true;

  static MemberList everyone(Rank n) { return {{}, n, true}; }
  static MemberList of(std::span<const Rank> list, Rank n) { return {list, n, false}; }

  std::int64_t size() const { return all ? n : static_cast<std::int64_t>(list.size()); }
  Rank at(std::int64_t k) const { return all ? static_cast<Rank>(k) : list[static_cast<std::size_t>(k)]; }
  // Members below rank r.
  std::int64_t count_below(std::int64_t r) const {
    if (all) return std::min<std::int64_t>(r, n);
    return std::lower_bound(list.begin(), list.end(), static_cast<std::uint64_t>(r),
                            [](Rank a, std::uint64_t b) { return a < b; }) -
           list.begin();
  }
  // r's position, or -1.
  std::int64_t find(Rank r) const {
    if (all) return r < n ? r : -1;
    const auto it = std::lower_bound(list.begin(), list.end(), r);
    return it != list.end() && *it == r ? it - list.begin() : -1;
  }
  bool contains(Rank r) const { return find(r) >= 0; }
};

// A run of consecutive positions in a list of members (a buffer's blocks).
struct Run {
  std::int64_t first = 0;
  std::int64_t count = 0;
};
using Runs = std::array<Run, 2>;  // a circular range is at most two runs; empty runs have count 0

// The positions, in `m`, of the members whose ranks lie in the circular range
// [start, start + length) of the n ranks (length <= n).
inline Runs member_runs(const MemberList& m, std::int64_t start, std::int64_t length) {
  const std::int64_t n = m.n;
  start %= n;
  const std::int64_t end = std::min(start + length, n);
  Runs runs{};
  runs[0] = {m.count_below(start), m.count_below(end) - m.count_below(start)};
  if (start + length > n) runs[1] = {0, m.count_below(start + length - n)};
  return runs;
}

// The circular range [first, first + count) of positions modulo m, as runs.
inline Runs circular_runs(std::int64_t first, std::int64_t count, std::int64_t m) {
  first %= m;
  Runs runs{};
  runs[0] = {first, std::min(count, m - first)};
  runs[1] = {0, count - runs[0].count};
  return runs;
}

// The nodes of a binomial tree over a root and a member list: node 0 is the
// root; the node at preorder position q > 0 (binomial_position) is the member
// q - (root outside ? 1 : 0) places after the root in circular rank order, so
// that a subtree is a circular range of member positions (of a buffer's
// blocks in members' order), and with the root the lowest member, preorder is
// rank order.
struct TreeGroup {
  MemberList members;
  Rank root = 0;
  bool root_inside = true;
  std::int64_t root_position = 0;  // members below the root

  TreeGroup(MemberList m, Rank r) : members(m), root(r), root_inside(m.contains(r)), root_position(m.count_below(r)) {}

  std::int64_t nodes() const { return members.size() + (root_inside ? 0 : 1); }
  std::int64_t offset() const { return root_inside ? 0 : 1; }
  // Member position of node v (v > 0, or the root when it is a member).
  std::int64_t position(std::int64_t v) const {
    return (root_position + binomial_position(v, nodes()) - offset()) % members.size();
  }
  Rank rank_of(std::int64_t v) const { return v == 0 ? root : members.at(position(v)); }
  // Node of rank r, or -1 if r is neither the root nor a member.
  std::int64_t node_of(Rank r) const {
    if (r == root) return 0;
    const std::int64_t k = members.find(r);
    if (k < 0) return -1;
    return binomial_node_at((k - root_position + members.size()) % members.size() + offset(), nodes());
  }
  // Where the subtree of child c starts in the blocks of its ancestor v's subtree.
  std::int64_t offset_in(std::int64_t v, std::int64_t c) const {
    return binomial_position(c, nodes()) - binomial_position(v, nodes());
  }
  // The member positions of the subtree of node v (v > 0), in preorder.
  Runs subtree_runs(std::int64_t v) const {
    return circular_runs(position(v), binomial_subtree_size(v, nodes()), members.size());
  }
};

}  // namespace switchyard::primitives::detail
