#pragma once
// The single-node static tasks (Varvarigos section 2.1) as calls on a
// communicator: one-to-one, single node broadcast (SNB) and scatter (SNS), their
// selective forms (SSNB, SSNS) and the gathers (SNG, SSNG). The accumulations
// (SNA, SSNA) are in accumulate.hpp.
//
//   co_await primitives::snb(comm, /*root*/ 0, buffer);             // every member's buffer = root's
//   co_await primitives::sns(comm, 0, all_blocks, my_block);        // root sends block r to rank r
//   co_await primitives::ssng(comm, 0, members, my_block, gathered);// root collects members' blocks
//
// Every member of comm calls each task (call_options.hpp); ranks and subsets
// are comm's. Subsets are sorted, strictly increasing rank lists; they may or
// may not contain the root. Blocks have the same size on every member; a
// message of another size is an InvalidArgument naming the task.
//
// Algorithms: kBinomial (the binomial tree of binomial_tree.hpp, ceil(log2 n)
// rounds, the one-port optimum; a scatter's tree hands each child its whole
// subtree's blocks in one message) and kDirect (the root sends to, or
// receives from, every member itself: n - 1 messages on the root, the naive
// baseline). kAuto, as measured on this 2-core machine (docs/benchmarks.md):
// the tree for gathers of blocks up to 512 B, direct for everything else.

#include <span>

#include "switchyard/communicator.hpp"
#include "switchyard/primitives/call_options.hpp"
#include "switchyard/task.hpp"

namespace switchyard::primitives {

/// `source` sends `send`; `destination` receives it into `recv` (exactly
/// send.size() bytes). Other members return at once. source == destination copies.
Task<void> one_to_one(Communicator comm, Rank source, Rank destination, std::span<const std::byte> send,
                      std::span<std::byte> recv);

/// SNB: the root's `buffer` is copied into every member's `buffer` (same size everywhere).
Task<void> snb(Communicator comm, Rank root, std::span<std::byte> buffer, CallOptions options = {});
/// SSNB: as SNB, to `members` only (and the root).
Task<void> ssnb(Communicator comm, Rank root, std::span<const Rank> members, std::span<std::byte> buffer,
                CallOptions options = {});

/// SNS: the root's `send` holds comm.size() blocks in rank order; block r lands
/// in rank r's `recv` (the block size is recv.size()). Non-roots' `send` is ignored.
Task<void> sns(Communicator comm, Rank root, std::span<const std::byte> send, std::span<std::byte> recv,
               CallOptions options = {});
/// SSNS: the root's `send` holds members.size() blocks in members' order; a
/// member's `recv` gets its block. Non-members (other than the root) return at once.
Task<void> ssns(Communicator comm, Rank root, std::span<const Rank> members, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options = {});

/// SNG: every member's `send` (one block) lands at position rank of the root's
/// `recv`, which holds comm.size() blocks. Non-roots' `recv` is ignored.
Task<void> sng(Communicator comm, Rank root, std::span<const std::byte> send, std::span<std::byte> recv,
               CallOptions options = {});
/// SSNG: members' blocks land in the root's `recv` in members' order.
Task<void> ssng(Communicator comm, Rank root, std::span<const Rank> members, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options = {});

}  // namespace switchyard::primitives
