#pragma once
// The multinode static tasks (Varvarigos section 2.1) as calls on a
// communicator: permutation, multinode broadcast (MNB), partial multinode
// broadcast (PMNB), total exchange (TE), partial multinode scatter and gather
// (PMNS, PMNG). PMNA, the dual of PMNB, is in accumulate.hpp.
//
//   co_await primitives::mnb(comm, mine, all);              // all = every member's block, rank order
//   co_await primitives::te(comm, send_blocks, recv_blocks);// block d of send -> rank d, block s of recv <- rank s
//   co_await primitives::pmns(comm, senders, send, recv);   // only `senders` scatter
//
// Conventions as in single_node.hpp. Algorithms (kAuto's choices measured by
// bench/bench_primitives, docs/benchmarks.md):
//   MNB, PMNB: kBruck (log2 n rounds, any n, no scratch: a process holds a
//              circular range of ranks, sent and received straight in the
//              result; kAuto), kRing (n - 1 rounds), kDirect.
//   TE, PMNS, PMNG: kDirect (every block posted at once; kAuto while a process
//              receives from at most 64 senders), kBruck (log2 n rounds of
//              packed blocks, about (n/2) log2 n blocks moved per process;
//              kAuto beyond that up to 1 KiB blocks), kPairwise (n - 1 rounds,
//              each block moved once, straight between the callers' buffers;
//              kAuto for larger blocks).

#include <span>

#include "switchyard/communicator.hpp"
#include "switchyard/primitives/call_options.hpp"
#include "switchyard/task.hpp"

namespace switchyard::primitives {

/// A permutation entry for a member that sends nothing.
inline constexpr Rank kNoPacket = kAnySource;

/// Member r sends `send` to destination[r] (itself: it keeps it; kNoPacket:
/// nothing). destination has comm.size() entries, the same on every member, and
/// no two members name the same destination. A member that some r names
/// receives into `recv`, exactly that packet's size.
Task<void> permutation(Communicator comm, std::span<const Rank> destination, std::span<const std::byte> send,
                       std::span<std::byte> recv, CallOptions options = {});

/// MNB: `all` (comm.size() blocks) receives every member's `mine`, in rank order.
Task<void> mnb(Communicator comm, std::span<const std::byte> mine, std::span<std::byte> all, CallOptions options = {});
/// PMNB: every member's `all` (senders.size() blocks) receives the senders'
/// `mine`, in senders' order. Other members' `mine` is ignored.
Task<void> pmnb(Communicator comm, std::span<const Rank> senders, std::span<const std::byte> mine,
                std::span<std::byte> all, CallOptions options = {});

/// TE: block d of `send` goes to rank d and lands as block s (the sender's
/// rank) of d's `recv`; both hold comm.size() blocks.
Task<void> te(Communicator comm, std::span<const std::byte> send, std::span<std::byte> recv, CallOptions options = {});
/// PMNS: each sender's `send` holds comm.size() blocks (block d for rank d);
/// every member's `recv` holds senders.size() blocks, in senders' order.
/// Non-senders' `send` is ignored.
Task<void> pmns(Communicator comm, std::span<const Rank> senders, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options = {});
/// PMNG: every member's `send` holds gatherers.size() blocks (block j for
/// gatherers[j]); each gatherer's `recv` holds comm.size() blocks in rank order.
/// Non-gatherers' `recv` is ignored.
Task<void> pmng(Communicator comm, std::span<const Rank> gatherers, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options = {});

}  // namespace switchyard::primitives
