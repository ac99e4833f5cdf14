#pragma once
// The binomial tree that single-node broadcast, accumulation, scatter and
// gather use under the one-port model (a node sends one packet and receives one
// per slot), in slot order: at slot t every node that already holds the packet,
// i.e. whose rank relative to the root is below 2^t, sends to the relative rank
// v + 2^t. The packet reaches n nodes in ceil(log2 n) slots, the one-port
// optimum (the number of holders at most doubles per slot). Shared by the slot
// algorithms (virtual networks) and by the calls on communicators, so both
// move packets along the same tree.
#include <algorithm>
#include <bit>
#include <cstdint>

namespace switchyard::primitives {

/// Slots a binomial broadcast over n nodes takes: ceil(log2 n); 0 for n <= 1.
constexpr int binomial_slots(std::int64_t n) noexcept {
  return n <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n - 1)));
}

/// The rank of `rank` relative to `root` in a group of n, and back.
constexpr std::int64_t relative_rank(std::int64_t rank, std::int64_t root, std::int64_t n) noexcept {
  return (rank - root + n) % n;
}
/// The absolute rank of relative rank `relative` (relative_rank's inverse).
constexpr std::int64_t absolute_rank(std::int64_t relative, std::int64_t root, std::int64_t n) noexcept {
  return (relative + root) % n;
}

/// The slot in which relative rank v > 0 receives: the index of its highest set
/// bit. Its parent (who sends to it then) is v without that bit.
constexpr int binomial_receive_slot(std::int64_t v) noexcept {
  return static_cast<int>(std::bit_width(static_cast<std::uint64_t>(v))) - 1;
}
/// The parent of relative rank v > 0: v without its highest set bit.
constexpr std::int64_t binomial_parent(std::int64_t v) noexcept {
  return v - (std::int64_t{1} << binomial_receive_slot(v));
}

/// Calls f(child, slot) for each child of relative rank v in a tree over n
/// nodes, in slot order (the first child receives the largest subtree last, so
/// reversing the order gives the accumulation/gather schedule).
template <class F>
constexpr void for_each_binomial_child(std::int64_t v, std::int64_t n, F&& f) {
  const int first = v == 0 ? 0 : binomial_receive_slot(v) + 1;
  for (int t = first; (std::int64_t{1} << t) < n; ++t) {
    const std::int64_t child = v + (std::int64_t{1} << t);
    if (child >= n) break;
    f(child, t);
  }
}

/// Nodes in the subtree of relative rank v (v itself included): the u < n
/// that agree with v in the bits up to v's receive slot, u = v (mod 2^(slot+1)),
/// which is what a scatter sends to v in one message.
constexpr std::int64_t binomial_subtree_size(std::int64_t v, std::int64_t n) noexcept {
  if (v == 0) return n;
  const std::int64_t stride = std::int64_t{2} << binomial_receive_slot(v);
  return (n - v + stride - 1) / stride;
}

/// The tree in preorder, each node's children by decreasing slot: every
/// subtree is a range of consecutive positions starting at its root, so a
/// scatter's relay holds its subtree's blocks in one piece, and an accumulation
/// that combines a node's children by decreasing slot (the reverse of the
/// broadcast's order) combines the positions in order. binomial_position(v, n)
/// is v's position, binomial_node_at its inverse.
constexpr std::int64_t binomial_position(std::int64_t v, std::int64_t n) noexcept {
  std::int64_t position = 0;
  std::int64_t node = 0;
  for (int t = 0; (std::int64_t{1} << t) <= v; ++t) {
    if (!(v & (std::int64_t{1} << t))) continue;
    // Skip node itself and the subtrees of its children of slots above t, which come first.
    position += 1;
    for (int u = t + 1; node + (std::int64_t{1} << u) < n; ++u)
      position += binomial_subtree_size(node + (std::int64_t{1} << u), n);
    node += std::int64_t{1} << t;
  }
  return position;
}
/// The relative rank at preorder position `position` (binomial_position's inverse).
constexpr std::int64_t binomial_node_at(std::int64_t position, std::int64_t n) noexcept {
  std::int64_t node = 0;
  std::int64_t at = 0;  // node's position
  while (at != position) {
    int top = node == 0 ? 0 : binomial_receive_slot(node) + 1;
    while (node + (std::int64_t{1} << (top + 1)) < n) ++top;  // node's last child's slot
    std::int64_t start = at + 1;
    for (int t = top; t >= 0; --t) {
      const std::int64_t child = node + (std::int64_t{1} << t);
      const std::int64_t size = binomial_subtree_size(child, n);
      if (position < start + size) {
        node = child;
        at = start;
        break;
      }
      start += size;
    }
  }
  return node;
}

}  // namespace switchyard::primitives
