// Collectives, shaped by the machine: the members of a communicator on one core
// combine their inputs in worker-local memory (no messages, no atomics), then
// one member per core, its leader, exchanges the core's combined input with the
// other cores' leaders, and the result is handed back to the members of the
// core. A barrier of 512 processes on 2 cores is 510 coroutine switches and one
// message each way between the cores. In a job across nodes the leaders of
// every core of every node exchange alike: cores are numbered across the job
// (RouteTable::global_core), and a leader on another node is reached through
// the network transport like any other process.

#include <cstring>
#include <optional>
#include <string>

#include "switchyard/communicator.hpp"
#include "switchyard/detail/group.hpp"
#include "switchyard/detail/job.hpp"
#include "switchyard/detail/pooled_array.hpp"
#include "switchyard/detail/worker.hpp"
#include "switchyard/process.hpp"
#include "switchyard/trace.hpp"

namespace switchyard {

namespace {

enum Kind : int { kBarrier, kAllgather, kAllreduce, kScan, kBroadcast, kAllgatherSplit };

const char* kind_name(int kind) {
  static constexpr const char* names[] = {"barrier", "allgather", "allreduce", "exclusive_scan", "broadcast",
                                                 "allgather_split"};
  return names[kind];
}

template <class T>
void put(std::vector<std::byte>& out, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
template <class T>
T get(const std::byte*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

// Adds the int64 vector stored in `b` (packed blobs are not 8-byte aligned) to `sum`.
void add_int64(std::vector<std::int64_t>& sum, std::span<const std::byte> b) {
  for (std::size_t i = 0; i < sum.size(); ++i) {
    std::int64_t v;
    std::memcpy(&v, b.data() + i * sizeof v, sizeof v);
    sum[i] += v;
  }
}

// Parses a core's (comm rank, bytes) list into `by_rank`.
void unpack_ranked(std::span<const std::byte> blob, std::vector<std::span<const std::byte>>& by_rank) {
  const std::byte* p = blob.data();
  const std::byte* end = p + blob.size();
  while (p < end) {
    const auto r = get<Rank>(p);
    const auto n = get<std::uint64_t>(p);
    by_rank[r] = {p, static_cast<std::size_t>(n)};
    p += n;
  }
}

std::vector<std::int64_t> to_int64(const std::vector<std::byte>& b) {
  std::vector<std::int64_t> out(b.size() / sizeof(std::int64_t));
  if (!out.empty()) std::memcpy(out.data(), b.data(), b.size());
  return out;
}

// Step 1 of a collective: this member's input joins its core's share.
void contribute(detail::CoreCollective& slot, int kind, Rank me, Rank root, std::span<const std::byte> mine) {
  if (kind == kAllgather || kind == kAllgatherSplit || kind == kScan) {
    slot.contributions.emplace_back(me, std::vector<std::byte>(mine.begin(), mine.end()));
  } else if (kind == kAllreduce) {
    const std::size_t len = mine.size() / sizeof(std::int64_t);
    if (slot.arrived == 0) {
      slot.sum.assign(len, 0);
    } else if (len != slot.sum.size()) {
      throw InvalidArgument("switchyard: allreduce on rank " + std::to_string(me) + ": vector of " +
                            std::to_string(len) + " elements, but other ranks passed " +
                            std::to_string(slot.sum.size()));
    }
    add_int64(slot.sum, mine);
  } else if (kind == kBroadcast && me == root) {
    slot.result.assign(mine.begin(), mine.end());
  }
  ++slot.arrived;
}

// Step 2: the core's share, as one blob for the other cores' leaders.
std::vector<std::byte> core_share(const detail::CoreCollective& slot, int kind, bool root_here) {
  std::vector<std::byte> blob;
  if (kind == kAllgather || kind == kAllgatherSplit || kind == kScan) {
    for (const auto& [r, bytes] : slot.contributions) {
      put(blob, r);
      put(blob, static_cast<std::uint64_t>(bytes.size()));
      blob.insert(blob.end(), bytes.begin(), bytes.end());
    }
  } else if (kind == kAllreduce) {
    const auto* p = reinterpret_cast<const std::byte*>(slot.sum.data());
    blob.assign(p, p + slot.sum.size() * sizeof(std::int64_t));
  } else if (kind == kBroadcast && root_here) {
    blob = slot.result;
  }
  return blob;
}

// Step 4 of an allgather (whole or split) or an exclusive scan: every rank's input, from this
// core's contributions and the other cores' shares. local_index_here(r) is
// rank r's index among this core's members, or nothing if r is elsewhere.
template <class LocalIndex>
void combine_ranked(detail::CoreCollective& slot, int kind, Rank n, std::span<const Message> remote,
                    std::size_t local_members, LocalIndex&& local_index_here) {
  std::vector<std::span<const std::byte>> by_rank(n);
  for (const auto& [r, bytes] : slot.contributions) by_rank[r] = bytes;
  for (const auto& m : remote) unpack_ranked(m.bytes(), by_rank);
  if (kind == kAllgather || kind == kAllgatherSplit) {
    std::size_t total = 0;
    for (const auto& b : by_rank) total += b.size();
    slot.result.clear();
    slot.result.reserve(total);
    for (const auto& b : by_rank) slot.result.insert(slot.result.end(), b.begin(), b.end());
    return;
  }
  const std::size_t len = by_rank[0].size();
  for (Rank r = 0; r < n; ++r) {
    if (by_rank[r].size() != len) {
      throw InvalidArgument("switchyard: exclusive_scan: rank " + std::to_string(r) + " passed " +
                            std::to_string(by_rank[r].size() / sizeof(std::int64_t)) +
                            " elements, rank 0 passed " + std::to_string(len / sizeof(std::int64_t)));
    }
  }
  std::vector<std::int64_t> running(len / sizeof(std::int64_t), 0);
  slot.per_member.assign(local_members, {});
  for (Rank r = 0; r < n; ++r) {
    if (const std::optional<std::size_t> index = local_index_here(r)) {
      const auto* p = reinterpret_cast<const std::byte*>(running.data());
      slot.per_member[*index].assign(p, p + len);
    }
    add_int64(running, by_rank[r]);
  }
}

// Step 4 of an allreduce: the other cores' partial sums added to this core's.
void combine_sums(detail::CoreCollective& slot, std::span<const Message> remote) {
  for (const auto& m : remote) {
    const std::size_t len = m.size() / sizeof(std::int64_t);
    if (len != slot.sum.size()) {
      throw InvalidArgument("switchyard: allreduce: vectors of " + std::to_string(len) + " and " +
                            std::to_string(slot.sum.size()) + " elements on different cores");
    }
    add_int64(slot.sum, m.bytes());
  }
  const auto* p = reinterpret_cast<const std::byte*>(slot.sum.data());
  slot.result.assign(p, p + slot.sum.size() * sizeof(std::int64_t));
}

}  // namespace

Task<std::vector<std::byte>> Process::collective(const detail::Group& g, Rank me, int kind,
                                                 std::span<const std::byte> mine, Rank root,
                                                 const Communicator::GatherSplit* split) {
  check_cancelled();
  const TraceSpan span(*this, TraceCategory::collective, kind_name(kind),
                       TraceArgs{.has_bytes = true, .bytes = mine.size(), .label = "communicator", .value = g.context()});
  const detail::Membership& members = g.members();
  const std::uint64_t seq = g.member(me).collectives++;
  const std::uint32_t here = job_.global_core(rank_);
  detail::CoreCollective& slot = g.collective_slot(here, seq);
  if (slot.seq != seq) {
    // Two slots suffice: nobody reaches call seq+2 before every member on this
    // core has left call seq, so slot seq&1 is free again by then.
    slot = detail::CoreCollective{};
    slot.seq = seq;
    slot.kind = kind;
  } else if (slot.kind != kind) {
    throw InvalidArgument("switchyard: collective #" + std::to_string(seq) + " on communicator " +
                          std::to_string(g.context()) + ": rank " + std::to_string(me) + " called " +
                          kind_name(kind) + " while other ranks called " + kind_name(slot.kind));
  }

  // 1. Contribute to the core's share.
  const Rank n = g.size();
  contribute(slot, kind, me, root, mine);

  const auto& local = members.local[here];
  Process& leader = *local.front();
  if (&leader != this) {
    if (slot.arrived == local.size()) leader.notify();
    while (!slot.complete) co_await park("the leader of its core to finish a collective: leader is", leader.rank_);
  } else {
    while (slot.arrived < local.size()) co_await park("the other processes of its core to reach a collective");

    // 2. The core's share, as one blob for the other cores' leaders.
    const std::uint32_t root_worker = job_.global_core(members.to_job(root));
    const std::vector<std::byte> blob = core_share(slot, kind, root_worker == here);

    // 3. Exchange between cores: post every send first, so that leaders never wait on each other.
    const Tag tag = kFirstReservedTag | static_cast<Tag>(seq & (kFirstReservedTag - 1));
    auto comm_rank_of = [&](std::uint32_t w) { return members.to_comm(members.leader[w]); };
    // From the per-core pool: a barrier before every timed exchange must not malloc.
    const std::size_t others = members.populated.size() - 1;
    detail::PooledArray<SendTicket> sends(others);
    detail::PooledArray<Message> remote(others);
    std::size_t k = 0;
    for (std::uint32_t w : members.populated) {
      if (w != here) sends.emplace(k++, [&] { return post_send_on(g, comm_rank_of(w), blob, tag, false); });
    }
    k = 0;
    for (std::uint32_t w : members.populated) {
      if (w == here) continue;
      RecvTicket t = post_recv_on(g, comm_rank_of(w), tag, {}, false);
      co_await wait(t);
      remote[k++] = t.take_message();
    }
    co_await wait_all(sends.span());

    // 4. Combine.
    if (kind == kAllgather || kind == kAllgatherSplit || kind == kScan) {
      combine_ranked(slot, kind, n, remote.span(), local.size(), [&](Rank r) {
        return job_.global_core(members.to_job(r)) == here ? std::optional<std::size_t>(members.local_index[r])
                                                         : std::nullopt;
      });
      if (kind == kAllgatherSplit) {
        // The core's one copy becomes its members' parts, and is let go.
        std::vector<Rank> here_ranks;
        here_ranks.reserve(local.size());
        for (const Process* p : local) here_ranks.push_back(members.to_comm(p->rank_));
        slot.per_member.assign(local.size(), {});
        (*split)(slot.result, here_ranks, slot.per_member);
        slot.result = {};
      }
    } else if (kind == kAllreduce) {
      combine_sums(slot, remote.span());
    } else if (kind == kBroadcast && root_worker != here) {
      std::size_t i = 0;
      for (std::uint32_t w : members.populated) {
        if (w == here) continue;
        if (w == root_worker) {
          const auto b = remote[i].bytes();
          slot.result.assign(b.begin(), b.end());
        }
        ++i;
      }
    }
    slot.complete = true;
    for (Process* p : local) p->notify();
  }

  // 5. Each member takes its copy of the result.
  if (kind == kScan) co_return slot.per_member[members.local_index[me]];
  if (kind == kAllgatherSplit) co_return std::move(slot.per_member[members.local_index[me]]);
  if (kind == kBarrier) co_return std::vector<std::byte>{};
  co_return slot.result;
}

// --- on a communicator ---

Task<void> Communicator::barrier() const {
  return [](Communicator c) -> Task<void> { co_await c.process_->collective(c.group(), c.rank_, kBarrier, {}, 0); }(
      *this);
}

Task<std::vector<std::byte>> Communicator::allgather(std::span<const std::byte> mine) const {
  return process_->collective(group(), rank_, kAllgather, mine, 0);
}

Task<std::vector<std::byte>> Communicator::allgather_split(std::span<const std::byte> mine, GatherSplit split) const {
  return [](Communicator c, std::span<const std::byte> v, GatherSplit f) -> Task<std::vector<std::byte>> {
    co_return co_await c.process_->collective(c.group(), c.rank_, kAllgatherSplit, v, 0, &f);
  }(*this, mine, std::move(split));
}

Task<std::vector<std::int64_t>> Communicator::allreduce(std::span<const std::int64_t> mine) const {
  return [](Communicator c, std::span<const std::int64_t> v) -> Task<std::vector<std::int64_t>> {
    co_return to_int64(co_await c.process_->collective(c.group(), c.rank_, kAllreduce, std::as_bytes(v), 0));
  }(*this, mine);
}

Task<std::vector<std::int64_t>> Communicator::exclusive_scan(std::span<const std::int64_t> mine) const {
  return [](Communicator c, std::span<const std::int64_t> v) -> Task<std::vector<std::int64_t>> {
    co_return to_int64(co_await c.process_->collective(c.group(), c.rank_, kScan, std::as_bytes(v), 0));
  }(*this, mine);
}

Task<std::vector<std::byte>> Communicator::broadcast(Rank root, std::span<const std::byte> bytes) const {
  process_->check_rank(group(), root, "broadcast root");
  return process_->collective(*group_, rank_, kBroadcast, bytes, root);
}

// --- on the world ---

Task<void> Process::barrier() { return world().barrier(); }
Task<std::vector<std::byte>> Process::allgather(std::span<const std::byte> mine) { return world().allgather(mine); }
Task<std::vector<std::int64_t>> Process::allreduce(std::span<const std::int64_t> mine) {
  return world().allreduce(mine);
}
Task<std::vector<std::int64_t>> Process::exclusive_scan(std::span<const std::int64_t> mine) {
  return world().exclusive_scan(mine);
}
Task<std::vector<std::byte>> Process::broadcast(Rank root, std::span<const std::byte> bytes) {
  return world().broadcast(root, bytes);
}

}  // namespace switchyard
