// The single-node tasks on binomial trees (binomial_tree.hpp) over a root and
// a member list (members.hpp's TreeGroup), or directly from/to the root.

#include "switchyard/primitives/single_node.hpp"

#include <cstring>

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

// kAuto of the single-node tasks, as bench_primitives measured them on this
// 2-core machine (docs/benchmarks.md, "Primitives"; ratios to direct in the same
// job, under heavy load from other builds): a gather's tree won at 16 B in 3
// of 4 cases (SNG 0.19 x at 32 processes and 0.43 x at 512, SSNG 0.26 x at
// 32), where the root takes log2(n) eager messages instead of n - 1; at 1 KiB
// (single-copy handovers, which wait for the receiver) direct won 3 of 4, and
// at 64 KiB, where the tree's relays copy each block about log2(n) / 2 times,
// all 4. The crossover is put at the runtime's default eager limit. Broadcasts
// and scatters post their sends without waiting, so the root's n - 1 posts
// cost less than the tree's log2(n) dependent rounds: direct won 18 of their
// 24 cases, the tree the other 6 by 3 to 12 %.
constexpr std::size_t kGatherTreeMaxBlock = 512;

bool use_direct(Algorithm a, std::size_t block, bool gather, const char* task) {
  if (a != Algorithm::kAuto && a != Algorithm::kBinomial && a != Algorithm::kDirect) {
    invalid(task, std::string("algorithm ") + to_string(a) + " is not one of auto, binomial, direct");
  }
  if (a == Algorithm::kAuto) return !gather || block > kGatherTreeMaxBlock;
  return a == Algorithm::kDirect;
}

std::size_t children_bound(std::int64_t nodes) { return static_cast<std::size_t>(binomial_slots(nodes)) + 1; }

Task<void> broadcast(Communicator c, TreeGroup g, std::span<std::byte> buffer, bool direct, const char* task) {
  const std::int64_t me = g.node_of(c.rank());
  if (me < 0) co_return;
  const std::int64_t n = g.nodes();
  if (direct) {
    Pending pending(c, me == 0 ? n : 0, 1, task);
    if (me == 0) {
      for (std::int64_t v = 1; v < n; ++v) pending.send(g.rank_of(v), buffer);
    } else {
      pending.receive(g.root, buffer);
    }
    co_await pending.wait();
    co_return;
  }
  Pending pending(c, children_bound(n), 1, task);
  if (me != 0) {
    pending.receive(g.rank_of(binomial_parent(me)), buffer);
    co_await pending.wait();
  }
  for_each_binomial_child(me, n, [&](std::int64_t child, int) { pending.send(g.rank_of(child), buffer); });
  co_await pending.wait();
}

// The root's `send` holds the members' blocks in members' order; a member's
// block lands in its `recv`. A relay receives its subtree's blocks (in node
// order) into scratch and hands each child its subtree's part.
Task<void> scatter(Communicator c, TreeGroup g, std::span<const std::byte> send, std::span<std::byte> recv,
                   std::size_t block, bool direct, Workspace& ws, const char* task) {
  const std::int64_t me = g.node_of(c.rank());
  if (me < 0) co_return;
  const std::int64_t n = g.nodes();
  Pending pending(c, direct && me == 0 ? n : 2 * children_bound(n), 2, task);
  if (me == 0) {
    if (g.root_inside) std::memcpy(recv.data(), send.data() + g.root_position * block, block);
    if (direct) {
      for (std::int64_t v = 1; v < n; ++v) pending.send(g.rank_of(v), send.subspan(g.position(v) * block, block));
    } else {
      for_each_binomial_child(0, n, [&](std::int64_t child, int) {
        pending.send_runs(g.rank_of(child), send, block, g.subtree_runs(child));
      });
    }
    co_await pending.wait();
    co_return;
  }
  if (direct) {
    pending.receive(g.root, recv);
    co_await pending.wait();
    co_return;
  }
  const std::int64_t size = binomial_subtree_size(me, n);
  const std::int64_t parent = binomial_parent(me);
  const std::span<std::byte> subtree = size == 1 ? recv : ws.bytes(size * block);
  if (parent == 0) {
    pending.receive_contiguous(g.root, subtree, block, g.subtree_runs(me));
  } else {
    pending.receive(g.rank_of(parent), subtree);
  }
  co_await pending.wait();
  if (size == 1) co_return;
  std::memcpy(recv.data(), subtree.data(), block);
  for_each_binomial_child(me, n, [&](std::int64_t child, int) {
    pending.send(g.rank_of(child),
                 subtree.subspan(g.offset_in(me, child) * block, binomial_subtree_size(child, n) * block));
  });
  co_await pending.wait();
}

// The dual of scatter: the root's `recv` collects the members' `send` blocks in
// members' order; a relay gathers its subtree's blocks in node order first.
Task<void> gather(Communicator c, TreeGroup g, std::span<const std::byte> send, std::span<std::byte> recv,
                  std::size_t block, bool direct, Workspace& ws, const char* task) {
  const std::int64_t me = g.node_of(c.rank());
  if (me < 0) co_return;
  const std::int64_t n = g.nodes();
  Pending pending(c, 2, direct && me == 0 ? n : 2 * children_bound(n), task);
  if (me == 0) {
    if (g.root_inside) std::memcpy(recv.data() + g.root_position * block, send.data(), block);
    if (direct) {
      for (std::int64_t v = 1; v < n; ++v) pending.receive(g.rank_of(v), recv.subspan(g.position(v) * block, block));
    } else {
      for_each_binomial_child(0, n, [&](std::int64_t child, int) {
        pending.receive_runs(g.rank_of(child), recv, block, g.subtree_runs(child));
      });
    }
    co_await pending.wait();
    co_return;
  }
  if (direct) {
    pending.send(g.root, send);
    co_await pending.wait();
    co_return;
  }
  const std::int64_t size = binomial_subtree_size(me, n);
  std::span<const std::byte> subtree = send;
  if (size > 1) {
    const std::span<std::byte> held = ws.bytes(size * block);
    std::memcpy(held.data(), send.data(), block);
    for_each_binomial_child(me, n, [&](std::int64_t child, int) {
      pending.receive(g.rank_of(child),
                      held.subspan(g.offset_in(me, child) * block, binomial_subtree_size(child, n) * block));
    });
    co_await pending.wait();
    subtree = held;
  }
  const std::int64_t parent = binomial_parent(me);
  if (parent == 0) {
    pending.send_contiguous(g.root, subtree, block, g.subtree_runs(me));
  } else {
    pending.send(g.rank_of(parent), subtree);
  }
  co_await pending.wait();
}

}  // namespace

Task<void> one_to_one(Communicator comm, Rank source, Rank destination, std::span<const std::byte> send,
                      std::span<std::byte> recv) {
  const Rank n = comm.size();
  detail::check_rank(source, n, "one_to_one", "source");
  detail::check_rank(destination, n, "one_to_one", "destination");
  const Communicator c = comm.library(kPrimitivesLibrary);
  if (source == destination) {
    if (c.rank() == source) {
      check_size(recv.size(), send.size(), "one_to_one", "the receive buffer");
      std::memmove(recv.data(), send.data(), send.size());
    }
    co_return;
  }
  Pending pending(c, 1, 1, "one_to_one");
  if (c.rank() == source) pending.send(destination, send);
  if (c.rank() == destination) pending.receive(source, recv);
  co_await pending.wait();
}

Task<void> snb(Communicator comm, Rank root, std::span<std::byte> buffer, CallOptions options) {
  detail::check_rank(root, comm.size(), "snb", "root");
  const bool direct = use_direct(options.algorithm, buffer.size(), false, "snb");
  co_await broadcast(comm.library(kPrimitivesLibrary), TreeGroup(MemberList::everyone(comm.size()), root), buffer,
                     direct, "snb");
}

Task<void> ssnb(Communicator comm, Rank root, std::span<const Rank> members, std::span<std::byte> buffer,
                CallOptions options) {
  detail::check_rank(root, comm.size(), "ssnb", "root");
  detail::check_members(members, comm.size(), "ssnb", "members");
  const bool direct = use_direct(options.algorithm, buffer.size(), false, "ssnb");
  co_await broadcast(comm.library(kPrimitivesLibrary), TreeGroup(MemberList::of(members, comm.size()), root), buffer,
                     direct, "ssnb");
}

Task<void> sns(Communicator comm, Rank root, std::span<const std::byte> send, std::span<std::byte> recv,
               CallOptions options) {
  const Rank n = comm.size();
  detail::check_rank(root, n, "sns", "root");
  const bool direct = use_direct(options.algorithm, recv.size(), false, "sns");
  if (comm.rank() == root) check_size(send.size(), n * recv.size(), "sns", "the root's send buffer");
  Workspace local;
  co_await scatter(comm.library(kPrimitivesLibrary), TreeGroup(MemberList::everyone(n), root), send, recv, recv.size(),
                   direct, options.workspace ? *options.workspace : local, "sns");
}

Task<void> ssns(Communicator comm, Rank root, std::span<const Rank> members, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options) {
  const Rank n = comm.size();
  detail::check_rank(root, n, "ssns", "root");
  detail::check_members(members, n, "ssns", "members");
  const MemberList m = MemberList::of(members, n);
  std::size_t block = recv.size();
  if (comm.rank() == root) {
    if (!m.contains(root)) block = send.size() / members.size();
    check_size(send.size(), members.size() * block, "ssns", "the root's send buffer");
  }
  const bool direct = use_direct(options.algorithm, block, false, "ssns");
  Workspace local;
  co_await scatter(comm.library(kPrimitivesLibrary), TreeGroup(m, root), send, recv, block, direct,
                   options.workspace ? *options.workspace : local, "ssns");
}

Task<void> sng(Communicator comm, Rank root, std::span<const std::byte> send, std::span<std::byte> recv,
               CallOptions options) {
  const Rank n = comm.size();
  detail::check_rank(root, n, "sng", "root");
  const bool direct = use_direct(options.algorithm, send.size(), true, "sng");
  if (comm.rank() == root) check_size(recv.size(), n * send.size(), "sng", "the root's receive buffer");
  Workspace local;
  co_await gather(comm.library(kPrimitivesLibrary), TreeGroup(MemberList::everyone(n), root), send, recv, send.size(),
                  direct, options.workspace ? *options.workspace : local, "sng");
}

Task<void> ssng(Communicator comm, Rank root, std::span<const Rank> members, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options) {
  const Rank n = comm.size();
  detail::check_rank(root, n, "ssng", "root");
  detail::check_members(members, n, "ssng", "members");
  const MemberList m = MemberList::of(members, n);
  std::size_t block = send.size();
  if (comm.rank() == root) {
    if (!m.contains(root)) block = recv.size() / members.size();
    check_size(recv.size(), members.size() * block, "ssng", "the root's receive buffer");
  }
  const bool direct = use_direct(options.algorithm, block, true, "ssng");
  Workspace local;
  co_await gather(comm.library(kPrimitivesLibrary), TreeGroup(m, root), send, recv, block, direct,
                  options.workspace ? *options.workspace : local, "ssng");
}

}  // namespace switchyard::primitives
