// The accumulations: the binomial tree reversed (combining on the way up), and
// PMNA by the dual of Bruck's allgather.

#include "switchyard/primitives/accumulate.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "members.hpp"
#include "pending.hpp"
#include "switchyard/primitives/binomial_tree.hpp"

namespace switchyard::primitives {
namespace {

using detail::check_size;
using detail::invalid;
using detail::MemberList;
using detail::Pending;
using detail::TreeGroup;

std::size_t aligned(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

void check_algorithm(Algorithm a, Algorithm allowed, const char* task) {
  if (a != Algorithm::kAuto && a != allowed) {
    invalid(task, std::string("algorithm ") + to_string(a) + " is not one of auto, " + to_string(allowed));
  }
}

void check_elements(std::size_t bytes, const Combiner& op, const char* task) {
  if (op.element_size == 0 || bytes % op.element_size != 0) {
    invalid(task, std::to_string(bytes) + " bytes are not a whole number of " + std::to_string(op.element_size) +
                      "-byte elements");
  }
}

// Combines the tree's contributions at its root into `result` (the root's
// `mine` too if it is a member). Children are combined by decreasing slot, so
// node v holds its subtree combined in preorder: with the root the lowest
// member, that is rank order (members.hpp). `scratch` holds two aligned blocks.
Task<void> tree_accumulate(Communicator c, TreeGroup g, std::span<const std::byte> mine, std::span<std::byte> result,
                           std::size_t bytes, Combiner op, std::span<std::byte> scratch, Tag tag, const char* task) {
  const std::int64_t me = g.node_of(c.rank());
  if (me < 0) co_return;
  const std::int64_t n = g.nodes();
  const std::span<std::byte> acc = me == 0 ? result.first(bytes) : scratch.first(bytes);
  const std::span<std::byte> incoming = scratch.subspan(aligned(bytes), bytes);
  bool holds = me != 0 || g.root_inside;
  if (holds) std::memmove(acc.data(), mine.data(), bytes);
  Pending pending(c, 1, 1, task);
  std::array<std::int64_t, 64> children{};
  std::size_t child_count = 0;
  for_each_binomial_child(me, n, [&](std::int64_t child, int) { children[child_count++] = child; });
  // By decreasing slot: the children's subtrees in preorder, i.e. in rank order.
  for (std::size_t i = child_count; i-- > 0;) {
    const std::int64_t child = children[i];
    pending.receive(g.rank_of(child), holds ? incoming : acc, tag);
    co_await pending.wait();
    if (holds) op(acc, incoming);
    holds = true;
  }
  if (me == 0) co_return;
  pending.send(g.rank_of(binomial_parent(me)), acc, tag);
  co_await pending.wait();
}

// SNA and SSNA over `m`: a tree rooted at the root when the order does not
// matter, else at the lowest member (node order = rank order), which then
// forwards the result to the root.
Task<void> accumulate(Communicator c, MemberList m, Rank root, std::span<const std::byte> mine,
                      std::span<std::byte> result, std::size_t bytes, Combiner op, bool commutative, Workspace& ws,
                      Tag tag, const char* task) {
  const Rank first = m.at(0);
  const std::span<std::byte> space = ws.bytes(3 * aligned(bytes));
  const std::span<std::byte> scratch = space.first(2 * aligned(bytes));
  if (commutative || first == root) {
    co_await tree_accumulate(c, TreeGroup(m, root), mine, result, bytes, op, scratch, tag, task);
    co_return;
  }
  const std::span<std::byte> forwarded = space.subspan(2 * aligned(bytes), bytes);
  co_await tree_accumulate(c, TreeGroup(m, first), mine, forwarded, bytes, op, scratch, tag, task);
  Pending pending(c, 1, 1, task);
  if (c.rank() == first) pending.send(root, forwarded, tag);
  if (c.rank() == root) pending.receive(first, result.first(bytes), tag);
  co_await pending.wait();
}

// PMNA by the dual of Bruck's allgather, rounds in reverse: before the round
// of distance d, rank r holds partial sums for the destinations in the
// circular rank range [r, r + 2d); it hands those in [r + d, r + d + count)
// to r + d and adds in what r - d hands it for [r, r + count).
Task<void> bruck_reduce_scatter(Communicator c, MemberList destinations, std::span<const std::byte> mine,
                                std::span<std::byte> result, std::size_t block, Combiner op, Workspace& ws,
                                const char* task) {
  const std::int64_t n = c.size();
  const std::int64_t r = c.rank();
  const std::size_t all = destinations.size() * block;
  const std::span<std::byte> space = ws.bytes(2 * aligned(all));
  const std::span<std::byte> acc = space.first(all);
  const std::span<std::byte> incoming = space.subspan(aligned(all), all);
  std::memcpy(acc.data(), mine.data(), all);
  std::int64_t d = 1;
  while (2 * d < n) d <<= 1;
  Pending pending(c, 2, 2, task);
  for (; d >= 1 && n > 1; d >>= 1) {
    const std::int64_t count = std::min(d, n - d);
    const detail::Runs in = detail::member_runs(destinations, r, count);
    pending.send_runs(static_cast<Rank>((r + d) % n), acc, block, detail::member_runs(destinations, r + d, count));
    pending.receive_runs(static_cast<Rank>((r + n - d) % n), incoming, block, in);
    co_await pending.wait();
    for (const detail::Run& run : in) {
      if (run.count > 0) {
        op(acc.subspan(run.first * block, run.count * block), incoming.subspan(run.first * block, run.count * block));
      }
    }
  }
  if (const auto i = destinations.find(c.rank()); i >= 0) std::memcpy(result.data(), acc.data() + i * block, block);
}

}  // namespace

Task<void> sna_bytes(Communicator comm, Rank root, std::span<const std::byte> mine, std::span<std::byte> result,
                     Combiner op, CallOptions options) {
  detail::check_rank(root, comm.size(), "sna", "root");
  check_algorithm(options.algorithm, Algorithm::kBinomial, "sna");
  check_elements(mine.size(), op, "sna");
  if (comm.rank() == root) check_size(result.size(), mine.size(), "sna", "the root's result");
  Workspace local;
  co_await accumulate(comm.library(kPrimitivesLibrary), MemberList::everyone(comm.size()), root, mine, result,
                      mine.size(), op, options.commutative, options.workspace ? *options.workspace : local, 0, "sna");
}

Task<void> ssna_bytes(Communicator comm, Rank root, std::span<const Rank> members, std::span<const std::byte> mine,
                      std::span<std::byte> result, Combiner op, CallOptions options) {
  detail::check_rank(root, comm.size(), "ssna", "root");
  detail::check_members(members, comm.size(), "ssna", "members");
  check_algorithm(options.algorithm, Algorithm::kBinomial, "ssna");
  const MemberList m = MemberList::of(members, comm.size());
  const std::size_t bytes = m.contains(comm.rank()) ? mine.size() : result.size();
  check_elements(bytes, op, "ssna");
  if (comm.rank() == root) check_size(result.size(), bytes, "ssna", "the root's result");
  Workspace local;
  co_await accumulate(comm.library(kPrimitivesLibrary), m, root, mine, result, bytes, op, options.commutative,
                      options.workspace ? *options.workspace : local, 0, "ssna");
}

Task<void> pmna_bytes(Communicator comm, std::span<const Rank> destinations, std::span<const std::byte> mine,
                      std::span<std::byte> result, Combiner op, CallOptions options) {
  const Rank n = comm.size();
  detail::check_members(destinations, n, "pmna", "destinations");
  const MemberList d = MemberList::of(destinations, n);
  if (op.element_size == 0 || mine.size() % (destinations.size() * op.element_size) != 0) {
    invalid("pmna", "a member's contribution of " + std::to_string(mine.size()) + " bytes is not " +
                        std::to_string(destinations.size()) + " equal blocks of whole elements");
  }
  const std::size_t block = mine.size() / destinations.size();
  check_elements(block, op, "pmna");
  if (d.contains(comm.rank())) check_size(result.size(), block, "pmna", "a destination's result");
  const Communicator c = comm.library(kPrimitivesLibrary);
  Workspace local;
  Workspace& ws = options.workspace ? *options.workspace : local;
  if (options.commutative) {
    check_algorithm(options.algorithm, Algorithm::kBruck, "pmna");
    co_await bruck_reduce_scatter(c, d, mine, result, block, op, ws, "pmna");
    co_return;
  }
  check_algorithm(options.algorithm, Algorithm::kBinomial, "pmna");
  for (std::int64_t j = 0; j < d.size(); ++j) {
    const Rank root = d.at(j);
    co_await accumulate(c, MemberList::everyone(n), root, mine.subspan(j * block, block),
                        c.rank() == root ? result : std::span<std::byte>{}, block, op, false, ws, static_cast<Tag>(j),
                        "pmna");
  }
}

}  // namespace switchyard::primitives
