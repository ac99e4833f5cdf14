#pragma once
// The binomial tree that single-node broadcast, accumulation, scatter and
// gather use under the one-port model (a node sends one packet and receives one
// per slot), in slot order: at slot t every node that already holds the packet,
// i.e. whose rank relative to the root is below 2^t, sends to the relative rank
// v + 2^t. The packet reaches n nodes in ceil(log2 n) slots, the one-port
// optimum (the number of holders at most doubles per slot). Shared by the slot
// algorithms (virtual networks) and by the calls on communicators, so both
// move packets along the same tree.
#include <bit>
#include <algorithm>
#include <cstdint>

namespace switchyard::primitives {

// Slots a binomial broadcast over n nodes takes: ceil(log2 n); 0 for n <= 1.
constexpr int binomial_slots(std::int64_t n) noexcept {
  return n <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n - 1)));
}

// The rank of `rank` relative to `root` in a group of n, and back.
constexpr std::int64_t relative_rank(std::int64_t rank, std::int64_t root, std::int64_t n) noexcept {
  return (rank - root + n) % n;
}
constexpr std::int64_t absolute_rank(std::int64_t relative, std::int64_t root, std::int64_t n) noexcept {
  return (relative + root) % n;
}

// The slot in which relative rank v > 0 receives: the index of its highest set
// bit. Its parent (who sends to it then) is v without that bit.
constexpr int binomial_receive_slot(std::int64_t v) noexcept {
  return static_cast<int>(std::bit_width(static_cast<std::uint64_t>(v))) - 1;
}
constexpr std::int64_t binomial_parent(std::int64_t v) noexcept {
  return v - (std::int64_t{1} << binomial_receive_slot(v));
}

// Calls f(child, slot) for each child of relative rank v in a tree over n
// nodes, in slot order (the first child receives the largest subtree last, so
// reversing the order gives the accumulation/gather schedule).
template <class F>
constexpr void for_each_binomial_child(std::int64_t v, std::int64_t n, F&& f) {
  const int first = v == 0 ? 0 : binomial_receive_slot(v) + 1;
  for (int t = first; (std::int64_t{1} << t) < n; ++t) {
    const std::int64_t child = v + (std::int64_t{1} << t);
    if (child >= n) break;
    f(child, t);
  }
}

// Nodes in the subtree of relative rank v (v itself included): the relative
// ranks v .. v + size - 1, which is what a scatter sends to v in one message.
constexpr std::int64_t binomial_subtree_size(std::int64_t v, std::int64_t n) noexcept {
  const std::int64_t span = v == 0 ? n : (std::int64_t{1} << binomial_receive_slot(v));
  return std::min(span, n - v);
}

}  // namespace switchyard::primitives
