// The multinode tasks: permutation; MNB and PMNB by Bruck's allgather, a ring
// or directly; TE, PMNS and PMNG (one engine: senders S x receivers G, TE being
// all x all) by Bruck's packed log-round exchange, shifted pairwise exchange or
// directly.

#include "switchyard/primitives/multinode.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "members.hpp"
#include "pending.hpp"

namespace switchyard::primitives {
namespace {

using detail::check_size;
using detail::invalid;
using detail::member_runs;
using detail::MemberList;
using detail::Pending;

// kAuto's crossovers for TE, PMNS and PMNG, measured by bench/bench_primitives
// (docs/benchmarks.md, "Primitives"). Direct (everything posted at once) won
// every case where a process receives from at most 64 senders (n = 32; PMNS
// with 64 of 512 senders), but its cost grows faster than linearly in the
// messages a process has in flight: at 512 senders Bruck's log2(n) packed
// rounds won TE at 16 B (about 9 times as fast as pairwise, 90 times as fast
// as direct) and 1 KiB (1.6 and 7.5 times; the times are in that section).
// Above 1 KiB, where 512 x 64 KiB does not fit in memory to measure, pairwise:
// it copies each block once where Bruck copies it about log2(n) / 2 times.
constexpr std::size_t kDirectMaxSenders = 64;
constexpr std::size_t kBruckMaxBlock = 1024;

Algorithm allgather_algorithm(Algorithm a, const char* task) {
  if (a == Algorithm::kAuto) return Algorithm::kBruck;
  if (a != Algorithm::kBruck && a != Algorithm::kRing && a != Algorithm::kDirect) {
    invalid(task, std::string("algorithm ") + to_string(a) + " is not one of auto, bruck, ring, direct");
  }
  return a;
}

Algorithm personalized_algorithm(Algorithm a, std::size_t block, std::size_t senders, const char* task) {
  if (a == Algorithm::kAuto) {
    if (senders <= kDirectMaxSenders) return Algorithm::kDirect;
    return block <= kBruckMaxBlock ? Algorithm::kBruck : Algorithm::kPairwise;
  }
  if (a != Algorithm::kBruck && a != Algorithm::kPairwise && a != Algorithm::kDirect) {
    invalid(task, std::string("algorithm ") + to_string(a) + " is not one of auto, bruck, pairwise, direct");
  }
  return a;
}

std::size_t block_of(std::size_t bytes, std::size_t blocks, const char* task, const char* what) {
  if (bytes % blocks != 0) {
    invalid(task, std::string(what) + " holds " + std::to_string(bytes) + " bytes, not a whole number of " +
                      std::to_string(blocks) + " blocks");
  }
  return bytes / blocks;
}

// --- allgather: every member receives the senders' blocks, in senders' order ---

// Bruck: after the round of distance d, rank r holds the blocks of the circular
// rank range [r, r + 2d): it receives [r + d, r + d + count) from r + d, which
// lands straight in `all` as at most two runs of senders' positions.
Task<void> bruck_allgather(Communicator c, MemberList senders, std::span<std::byte> all, std::size_t block,
                           const char* task) {
  const std::int64_t n = c.size();
  const std::int64_t r = c.rank();
  Pending pending(c, 2, 2, task);
  for (std::int64_t d = 1; d < n; d <<= 1) {
    const std::int64_t count = std::min(d, n - d);
    pending.receive_runs(static_cast<Rank>((r + d) % n), all, block, member_runs(senders, r + d, count));
    pending.send_runs(static_cast<Rank>((r + n - d) % n), all, block, member_runs(senders, r, count));
    co_await pending.wait();
  }
}

// Ring: in round k rank r passes rank r - k's block on to r + 1.
Task<void> ring_allgather(Communicator c, MemberList senders, std::span<std::byte> all, std::size_t block,
                          const char* task) {
  const std::int64_t n = c.size();
  const std::int64_t r = c.rank();
  Pending pending(c, 1, 1, task);
  for (std::int64_t k = 0; k + 1 < n; ++k) {
    const auto outgoing = static_cast<Rank>((r + n - k) % n);
    const auto incoming = static_cast<Rank>((r + 2 * n - k - 1) % n);
    if (const auto i = senders.find(incoming); i >= 0) {
      pending.receive(static_cast<Rank>((r + n - 1) % n), all.subspan(i * block, block));
    }
    if (const auto o = senders.find(outgoing); o >= 0) {
      pending.send(static_cast<Rank>((r + 1) % n), all.subspan(o * block, block));
    }
    co_await pending.wait();
  }
}

Task<void> direct_allgather(Communicator c, MemberList senders, std::span<std::byte> all, std::size_t block,
                            const char* task) {
  const std::int64_t n = c.size();
  const std::int64_t r = c.rank();
  const std::int64_t mine = senders.find(c.rank());
  Pending pending(c, mine >= 0 ? n : 0, senders.size(), task);
  for (std::int64_t k = 1; k < n; ++k) {
    const auto from = static_cast<Rank>((r + n - k) % n);
    if (const auto i = senders.find(from); i >= 0) pending.receive(from, all.subspan(i * block, block));
    if (mine >= 0) pending.send(static_cast<Rank>((r + k) % n), all.subspan(mine * block, block));
  }
  co_await pending.wait();
}

Task<void> allgather(Communicator comm, MemberList senders, std::span<const std::byte> mine, std::span<std::byte> all,
                     std::size_t block, Algorithm algorithm, const char* task) {
  const Communicator c = comm.library(kPrimitivesLibrary);
  if (const auto i = senders.find(c.rank()); i >= 0) {
    check_size(mine.size(), block, task, "a sender's block");
    std::memmove(all.data() + i * block, mine.data(), block);
  }
  switch (algorithm) {
    case Algorithm::kRing:
      co_await ring_allgather(c, senders, all, block, task);
      break;
    case Algorithm::kDirect:
      co_await direct_allgather(c, senders, all, block, task);
      break;
    default:
      co_await bruck_allgather(c, senders, all, block, task);
      break;
  }
}

// --- personalized exchange: each sender sends a block to each receiver ---

struct Exchange {
  MemberList senders;  // TE, PMNG: everyone; PMNS: the senders
  MemberList receivers;  // TE, PMNS: everyone; PMNG: the gatherers
  std::size_t block = 0;
  std::span<const std::byte> send;  // the block for receivers.at(j) at j
  std::span<std::byte> recv;  // the block from senders.at(i) at i

  bool present(std::int64_t s, std::int64_t d) const {
    return s != d && senders.contains(static_cast<Rank>(s)) && receivers.contains(static_cast<Rank>(d));
  }
  std::span<const std::byte> to(std::int64_t d) const {
    return send.subspan(receivers.find(static_cast<Rank>(d)) * block, block);
  }
  std::span<std::byte> from(std::int64_t s) const {
    return recv.subspan(senders.find(static_cast<Rank>(s)) * block, block);
  }
};

// Shifted pairwise exchange: in round k rank r sends to r + k and receives
// from r - k, each block straight between the callers' buffers, one round at
// a time; or (direct) every round posted at once.
Task<void> pairwise_exchange(Communicator c, Exchange x, bool direct, const char* task) {
  const std::int64_t n = c.size();
  const std::int64_t r = c.rank();
  Pending pending(c, direct ? n : 1, direct ? n : 1, task);
  for (std::int64_t k = 1; k < n; ++k) {
    const std::int64_t to = (r + k) % n;
    const std::int64_t from = (r + n - k) % n;
    if (x.present(from, r)) pending.receive(static_cast<Rank>(from), x.from(from));
    if (x.present(r, to)) pending.send(static_cast<Rank>(to), x.to(to));
    if (!direct) co_await pending.wait();
  }
  co_await pending.wait();
}

// Bruck's exchange: slot j of a rank's table holds a block destined j ranks
// further on. In the round of distance d every slot with bit d set moves to
// rank + d, so a block reaches its destination after the rounds of the bits of
// j. The block in slot j at rank r in that round left its source
// r - (j mod d) and is absent (not packed) unless that source sends to its
// destination.
Task<void> bruck_exchange(Communicator c, Exchange x, Workspace& ws, const char* task) {
  const std::int64_t n = c.size();
  const std::int64_t r = c.rank();
  const std::size_t b = x.block;
  const std::int64_t half = (n + 1) / 2;
  const std::span<std::byte> space = ws.bytes((n + 2 * half) * b);
  std::byte* table = space.data();
  std::byte* out = table + n * b;
  std::byte* in = out + half * b;
  for (std::int64_t j = 1; j < n; ++j) {
    if (x.present(r, (r + j) % n)) std::memcpy(table + j * b, x.to((r + j) % n).data(), b);
  }
  Pending pending(c, 1, 1, task);
  for (std::int64_t d = 1; d < n; d <<= 1) {
    std::int64_t packed = 0;
    std::int64_t expected = 0;
    for (std::int64_t j = d; j < n; ++j) {
      if (!(j & d)) continue;
      const std::int64_t mine = (r + n - (j & (d - 1))) % n;  // source of my slot j
      const std::int64_t theirs = (r + 2 * n - d - (j & (d - 1))) % n;  // source of r - d's slot j
      if (x.present(mine, (mine + j) % n)) std::memcpy(out + b * packed++, table + j * b, b);
      if (x.present(theirs, (theirs + j) % n)) ++expected;
    }
    if (expected > 0) pending.receive(static_cast<Rank>((r + n - d) % n), {in, expected * b});
    if (packed > 0) pending.send(static_cast<Rank>((r + d) % n), {out, packed * b});
    co_await pending.wait();
    std::int64_t unpacked = 0;
    for (std::int64_t j = d; j < n; ++j) {
      const std::int64_t theirs = (r + 2 * n - d - (j & (d - 1))) % n;
      if ((j & d) && x.present(theirs, (theirs + j) % n)) std::memcpy(table + j * b, in + b * unpacked++, b);
    }
  }
  for (std::int64_t j = 1; j < n; ++j) {
    const std::int64_t source = (r + n - j) % n;
    if (x.present(source, r)) std::memcpy(x.from(source).data(), table + j * b, b);
  }
}

Task<void> exchange(Communicator comm, Exchange x, Algorithm algorithm, Workspace* workspace, const char* task) {
  const Communicator c = comm.library(kPrimitivesLibrary);
  const Rank r = c.rank();
  if (x.senders.contains(r) && x.receivers.contains(r)) std::memmove(x.from(r).data(), x.to(r).data(), x.block);
  switch (algorithm) {
    case Algorithm::kPairwise:
      co_await pairwise_exchange(c, x, false, task);
      break;
    case Algorithm::kDirect:
      co_await pairwise_exchange(c, x, true, task);
      break;
    default: {
      Workspace local;
      co_await bruck_exchange(c, x, workspace ? *workspace : local, task);
      break;
    }
  }
}

// PMNS (`set` sends to everyone) and PMNG (everyone sends to `set`): the set's
// side holds comm.size() blocks, the other side set.size().
Task<void> partial_exchange(Communicator comm, std::span<const Rank> set, bool set_sends,
                            std::span<const std::byte> send, std::span<std::byte> recv, CallOptions options) {
  const char* task = set_sends ? "pmns" : "pmng";
  const Rank n = comm.size();
  detail::check_members(set, n, task, set_sends ? "senders" : "gatherers");
  const MemberList s = MemberList::of(set, n);
  const std::size_t block = set_sends ? block_of(recv.size(), set.size(), task, "the receive buffer")
                                      : block_of(send.size(), set.size(), task, "the send buffer");
  if (s.contains(comm.rank())) {
    check_size(set_sends ? send.size() : recv.size(), n * block, task,
               set_sends ? "a sender's send buffer" : "a gatherer's receive buffer");
  }
  const Algorithm a = personalized_algorithm(options.algorithm, block, set_sends ? set.size() : n, task);
  const MemberList everyone = MemberList::everyone(n);
  co_await exchange(comm, Exchange{set_sends ? s : everyone, set_sends ? everyone : s, block, send, recv}, a,
                    options.workspace, task);
}

}  // namespace

Task<void> permutation(Communicator comm, std::span<const Rank> destination, std::span<const std::byte> send,
                       std::span<std::byte> recv, CallOptions) {
  const Rank n = comm.size();
  const Rank r = comm.rank();
  if (destination.size() != n) {
    invalid("permutation",
            "destination has " + std::to_string(destination.size()) + " entries for " + std::to_string(n) + " members");
  }
  Rank source = kNoPacket;
  for (Rank s = 0; s < n; ++s) {
    if (destination[s] == kNoPacket) continue;
    detail::check_rank(destination[s], n, "permutation", ("destination[" + std::to_string(s) + "]").c_str());
    if (destination[s] != r) continue;
    if (source != kNoPacket) {
      invalid("permutation", "ranks " + std::to_string(source) + " and " + std::to_string(s) + " both send to " +
                                 std::to_string(r) + ": destinations must be distinct");
    }
    source = s;
  }
  const Communicator c = comm.library(kPrimitivesLibrary);
  if (source == r) {
    check_size(recv.size(), send.size(), "permutation", "the receive buffer");
    std::memmove(recv.data(), send.data(), send.size());
    co_return;
  }
  Pending pending(c, 1, 1, "permutation");
  if (source != kNoPacket) pending.receive(source, recv);
  if (destination[r] != kNoPacket) pending.send(destination[r], send);
  co_await pending.wait();
}

Task<void> mnb(Communicator comm, std::span<const std::byte> mine, std::span<std::byte> all, CallOptions options) {
  const Algorithm a = allgather_algorithm(options.algorithm, "mnb");
  check_size(all.size(), mine.size() * comm.size(), "mnb", "the result buffer");
  co_await allgather(comm, MemberList::everyone(comm.size()), mine, all, mine.size(), a, "mnb");
}

Task<void> pmnb(Communicator comm, std::span<const Rank> senders, std::span<const std::byte> mine,
                std::span<std::byte> all, CallOptions options) {
  const Algorithm a = allgather_algorithm(options.algorithm, "pmnb");
  detail::check_members(senders, comm.size(), "pmnb", "senders");
  const std::size_t block = block_of(all.size(), senders.size(), "pmnb", "the result buffer");
  co_await allgather(comm, MemberList::of(senders, comm.size()), mine, all, block, a, "pmnb");
}

Task<void> te(Communicator comm, std::span<const std::byte> send, std::span<std::byte> recv, CallOptions options) {
  const Rank n = comm.size();
  const std::size_t block = block_of(send.size(), n, "te", "the send buffer");
  check_size(recv.size(), send.size(), "te", "the receive buffer");
  const Algorithm a = personalized_algorithm(options.algorithm, block, n, "te");
  co_await exchange(comm, Exchange{MemberList::everyone(n), MemberList::everyone(n), block, send, recv}, a,
                    options.workspace, "te");
}

Task<void> pmns(Communicator comm, std::span<const Rank> senders, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options) {
  co_await partial_exchange(comm, senders, true, send, recv, options);
}

Task<void> pmng(Communicator comm, std::span<const Rank> gatherers, std::span<const std::byte> send,
                std::span<std::byte> recv, CallOptions options) {
  co_await partial_exchange(comm, gatherers, false, send, recv, options);
}

}  // namespace switchyard::primitives
