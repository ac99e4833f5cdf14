// Collectives, shaped by the machine: the members of a communicator on one core
// combine their inputs in worker-local memory (no messages, no atomics), then
// one member per core, its leader, exchanges the core's combined input with the
// other cores' leaders, and the result is handed back to the members of the
// core. A barrier of 512 processes on 2 cores is 510 coroutine switches and,
// on one node, one word that each core's leader stores and the other's loads
// (Group::reached): no message.
//
// Across nodes, the leaders of every core of every node exchange with each
// other: cores are numbered across the job (RouteTable::global_core), and a
// leader on another node is reached through the network transport like any
// other process.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>

#include "collective_kind.hpp"
#include "group.hpp"
#include "job.hpp"
#include "switchyard/assert.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/detail/pooled_array.hpp"
#include "switchyard/process.hpp"
#include "switchyard/trace.hpp"
#include "watch_awaiter.hpp"
#include "worker.hpp"

namespace switchyard {

namespace {

using detail::CollectiveKind;
using enum detail::CollectiveKind;

const char* kind_name(CollectiveKind kind) {
  static constexpr const char* names[] = {"barrier",        "allgather", "allreduce",
                                          "exclusive_scan", "broadcast", "allgather_split"};
  return names[static_cast<int>(kind)];
}

// The call, in the stall report's words (Process::ActivityScope).
const char* activity_of(CollectiveKind kind) {
  static constexpr const char* names[] = {"a barrier (a collective)",    "an allgather (a collective)",
                                          "an allreduce (a collective)", "an exclusive scan (a collective)",
                                          "a broadcast (a collective)",  "an allgather_split (a collective)"};
  return names[static_cast<int>(kind)];
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

// What a core's leader says about the call its share is for: a core whose
// members called another collective, or a broadcast naming another root, is
// named as such instead of having its bytes mixed into the wrong call.
struct CallStamp {
  CollectiveKind kind;
  Rank root;
};

// Step 1 of a collective, for a kind with data: this member's input joins
// its core's share (before it counts as arrived). Out of line: a barrier, the
// collective called most, brings no data and only counts itself.
[[gnu::noinline]] void contribute_data(detail::CoreCollective& slot, CollectiveKind kind, Rank me, Rank root,
                                       std::span<const std::byte> mine) {
  if (kind == kBroadcast) {
    if (slot.arrived == 0) {
      slot.root = root;
    } else if (root != slot.root) {
      throw InvalidArgument("switchyard: broadcast on rank " + std::to_string(me) + ": root " + std::to_string(root) +
                            ", but other ranks named root " + std::to_string(slot.root));
    }
  }
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
}

// Step 1 of a collective: this member's input joins its core's share.
inline void contribute(detail::CoreCollective& slot, CollectiveKind kind, Rank me, Rank root,
                       std::span<const std::byte> mine) {
  if (kind != kBarrier) contribute_data(slot, kind, me, root, mine);
  ++slot.arrived;
}

// Step 2: the core's share, as one blob for the other cores' leaders.
std::vector<std::byte> core_share(const detail::CoreCollective& slot, CollectiveKind kind, bool root_here) {
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
// core's contributions and the other cores' shares (blobs of ranked inputs).
// `here`: this core, as the job numbers cores.
void combine_ranked(detail::CoreCollective& slot, CollectiveKind kind, Rank n,
                    std::span<const std::span<const std::byte>> remote, const detail::Job& job,
                    const detail::Membership& members, std::uint32_t here) {
  std::vector<std::span<const std::byte>> by_rank(n);
  for (const auto& [r, bytes] : slot.contributions) by_rank[r] = bytes;
  for (const auto& blob : remote) unpack_ranked(blob, by_rank);
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
                            std::to_string(by_rank[r].size() / sizeof(std::int64_t)) + " elements, rank 0 passed " +
                            std::to_string(len / sizeof(std::int64_t)));
    }
  }
  std::vector<std::int64_t> running(len / sizeof(std::int64_t), 0);
  slot.per_member.assign(members.local[here].size(), {});
  for (Rank r = 0; r < n; ++r) {
    if (job.global_core(members.to_job(r)) == here) {
      const auto* p = reinterpret_cast<const std::byte*>(running.data());
      slot.per_member[members.cores.index[r]].assign(p, p + len);
    }
    add_int64(running, by_rank[r]);
  }
}

// Step 4 of an allreduce: the other cores' partial sums added to `sum`.
void add_sums(std::vector<std::int64_t>& sum, std::span<const std::span<const std::byte>> remote) {
  for (const auto& blob : remote) {
    const std::size_t len = blob.size() / sizeof(std::int64_t);
    if (len != sum.size()) {
      throw InvalidArgument("switchyard: allreduce: vectors of " + std::to_string(len) + " and " +
                            std::to_string(sum.size()) + " elements on different cores");
    }
    add_int64(sum, blob);
  }
}

// A share received from another core's leader `from`, its CallStamp checked
// against this core's and taken off.
std::span<const std::byte> unstamped(std::span<const std::byte> received, const CallStamp& mine, const detail::Group& g,
                                     std::uint64_t seq, Rank from) {
  CallStamp theirs{kNone, 0};
  if (received.size() >= sizeof theirs)
    std::memcpy(&theirs, received.data() + received.size() - sizeof theirs, sizeof theirs);
  const std::string call =
      "switchyard: collective #" + std::to_string(seq) + " on communicator " + std::to_string(g.context());
  if (theirs.kind != mine.kind) {
    throw InvalidArgument(
        call + ": the processes of this core called " + kind_name(mine.kind) + ", those of rank " +
        std::to_string(from) + "'s core called " +
        (theirs.kind >= kBarrier && theirs.kind <= kAllgatherSplit ? kind_name(theirs.kind) : "something else"));
  }
  if (mine.kind == kBroadcast && theirs.root != mine.root) {
    throw InvalidArgument(call + ": a broadcast from root " + std::to_string(mine.root) + " here, from root " +
                          std::to_string(theirs.root) + " on rank " + std::to_string(from) + "'s core");
  }
  return received.first(received.size() - sizeof theirs);
}

// A member of the core entered call `seq` as another kind.
[[noreturn, gnu::cold, gnu::noinline]] void mismatched_call(const detail::Group& g, Rank me, std::uint64_t seq,
                                                            CollectiveKind kind, CollectiveKind theirs) {
  throw InvalidArgument("switchyard: collective #" + std::to_string(seq) + " on communicator " +
                        std::to_string(g.context()) + ": rank " + std::to_string(me) + " called " + kind_name(kind) +
                        " while other ranks called " + kind_name(theirs));
}

// The slot of call `seq` on core `here`, made ready for it by its first
// member of g there: out of line, once per call and core.
[[gnu::noinline]] void open_slot(detail::CoreCollective& slot, const detail::Group& g, std::uint32_t here,
                                 std::uint64_t seq, CollectiveKind kind) {
  // Two slots suffice: nobody reaches call seq+2 before every member on this
  // core has left call seq, so slot seq&1 is free again by then.
  SWITCHYARD_ASSERT(slot.seq == ~std::uint64_t{0} ? seq < 2 : slot.seq + 2 == seq);
  slot = detail::CoreCollective{};
  slot.seq = seq;
  slot.kind = kind;
  slot.members = static_cast<std::uint32_t>(g.members().local[here].size());
}

// Whether a member of the core opened `slot` for call `seq` already (else this
// member, the first, opens it). InvalidArgument if it did for another kind.
inline bool slot_open(const detail::CoreCollective& slot, const detail::Group& g, Rank me, std::uint64_t seq,
                      CollectiveKind kind) {
  if (slot.seq != seq) return false;
  if (slot.kind != kind) [[unlikely]]
    mismatched_call(g, me, seq, kind, slot.kind);
  return true;
}

// A member's entry into its next collective call on g: the call's number and
// its core's slot of it (made by the first member of the core to enter).
// InvalidArgument if another member of the core entered it as another kind.
inline std::pair<detail::CoreCollective*, std::uint64_t> enter_call(const detail::Group& g, Rank me, std::uint32_t here,
                                                                    CollectiveKind kind) {
  const std::uint64_t seq = g.member(me).collectives++;
  detail::CoreCollective& slot = g.collective_slot(here, seq);
  if (!slot_open(slot, g, me, seq, kind)) open_slot(slot, g, here, seq, kind);
  return {&slot, seq};
}

// Within one node, the core `here` has reached call `seq` of `kind`: its word
// for the other cores (Group::reached). Stored once per call, by the member
// that completes the core's share.
void store_reached(const detail::Group& g, std::uint32_t here, std::uint64_t seq, CollectiveKind kind) {
  // Calls follow each other on a core (relaxed: its own word).
  SWITCHYARD_ASSERT(detail::Group::reached_call(g.reached(here).load(std::memory_order_relaxed)) == seq);
  // Release: pairs with the other cores' acquire (reached_by, WatchAwaiter).
  g.reached(here).store(detail::Group::reached_word(seq + 1, kind), std::memory_order_release);
}

// Whether core w has reached call `seq` (acquire: pairs with store_reached).
// A word that shows the same call in another collective is a mismatch, told
// as between_cores tells it.
bool reached_by(const detail::Group& g, std::uint32_t w, CollectiveKind kind, std::uint64_t seq) {
  const std::uint64_t theirs = g.reached(w).load(std::memory_order_acquire);
  if (theirs < detail::Group::first_word_of(seq + 1)) return false;
  const CollectiveKind their_kind = detail::Group::reached_kind(theirs);
  if (detail::Group::reached_call(theirs) == seq + 1 && their_kind != kind) {
    const detail::Membership& members = g.members();
    throw InvalidArgument("switchyard: collective #" + std::to_string(seq) + " on communicator " +
                          std::to_string(g.context()) + ": the processes of this core called " + kind_name(kind) +
                          ", those of rank " + std::to_string(members.to_comm(members.leader[w])) + "'s core called " +
                          kind_name(their_kind));
  }
  return true;
}

// Rings the other cores of g's members after storing this core's word: a
// core waiting for it may sleep.
void ring_other_cores(detail::Job& job, const detail::Group& g, std::uint32_t here) {
  for (std::uint32_t w : g.members().populated) {
    if (w != here) job.worker(job.routes().core_route(w).core).doorbell().ring();
  }
}

}  // namespace

template <class Result>
Task<Result> Process::collective(const detail::Group& g, Rank me, CollectiveKind kind, std::span<const std::byte> mine,
                                 Rank root, const Communicator::GatherSplit* split) {
  check_cancelled();
  const TraceSpan span(
      *this, TraceCategory::collective, kind_name(kind),
      TraceArgs{.has_bytes = true, .bytes = mine.size(), .label = "communicator", .value = g.context()});
  const ActivityScope activity(*this, activity_of(kind), g.context());
  const detail::Membership& members = g.members();
  const std::uint32_t here = global_core_;
  const auto [slot_ptr, seq] = enter_call(g, me, here, kind);
  detail::CoreCollective& slot = *slot_ptr;

  // 1. Contribute to the core's share.
  contribute(slot, kind, me, root, mine);

  const auto& local = members.local[here];
  Process& leader = *local.front();
  if (&leader != this) {
    if (slot.arrived == slot.members) leader.notify();
    while (!slot.complete) co_await park("the leader of its core to finish a collective: leader is", leader.rank_);
  } else {
    while (slot.arrived < slot.members) co_await park("the other processes of its core to reach a collective");

    // 2. The core's share, as one blob for the other cores' leaders. Within
    // one node the leader also says which call its core has reached, which
    // is all a barrier exchanges, and how a barrier's leader sees another
    // core's leader in another collective.
    const bool one_node = members.nodes_spanned == 1;
    if (one_node) store_reached(g, here, seq, kind);
    if (one_node && kind == kBarrier) {
      ring_other_cores(job_, g, here);
      co_await reach_other_cores(g, kind, seq);
    } else {
      // 3. Between cores, and 4. combine.
      const std::uint32_t root_worker = job_.global_core(members.to_job(root));
      std::vector<std::byte> blob = core_share(slot, kind, root_worker == here);
      co_await between_cores(g, slot, kind, seq, root, root_worker, blob);
    }
    if (kind == kAllgatherSplit) {
      // The core's one copy becomes its members' parts, and is let go.
      std::vector<Rank> here_ranks;
      here_ranks.reserve(local.size());
      for (const Process* p : local) here_ranks.push_back(members.to_comm(p->rank_));
      slot.per_member.assign(local.size(), {});
      (*split)(slot.result, here_ranks, slot.per_member);
      slot.result = {};
    }
    release_core(slot, local);
  }

  // 5. Each member takes its copy of the result.
  if constexpr (!std::is_void_v<Result>) {
    if (kind == kScan) co_return slot.per_member[members.cores.index[me]];
    if (kind == kAllgatherSplit) co_return std::move(slot.per_member[members.cores.index[me]]);
    co_return slot.result;
  }
}

// A barrier's step 3 within one node: this core's call is stored in its
// Group::reached word and every other core rung (collective(), BarrierCall);
// this one waits until each other core's word reaches the call. One
// release-acquire pair per pair of cores, no message.
Task<void> Process::reach_other_cores(const detail::Group& g, CollectiveKind kind, std::uint64_t seq) {
  const ActivityScope activity(*this, activity_of(kind), g.context());  // the same as collective()'s, for a BarrierCall
  const std::uint32_t here = global_core_;
  const std::uint64_t call = seq + 1;
  for (std::uint32_t w : g.members().populated) {
    if (w == here) continue;
    co_await detail::WatchAwaiter(*this, g.reached(w), detail::Group::first_word_of(call),
                                  "the other cores to reach the barrier");
    reached_by(g, w, kind, seq);  // reached: checks that it is the same collective
  }
}

// Step 3 over messages between the leaders of every core of every node, and
// step 4: post every send first, so that leaders never wait on each other.
Task<void> Process::between_cores(const detail::Group& g, detail::CoreCollective& slot, CollectiveKind kind,
                                  std::uint64_t seq, Rank root, std::uint32_t root_worker,
                                  std::vector<std::byte>& blob) {
  const detail::Membership& members = g.members();
  const std::uint32_t here = global_core_;
  const Tag tag = kFirstReservedTag | static_cast<Tag>(seq & (kFirstReservedTag - 1));
  auto comm_rank_of = [&](std::uint32_t w) { return members.to_comm(members.leader[w]); };
  // The share, then its CallStamp. An empty share (a barrier's) sends the
  // stamp alone, from here: a barrier before every timed exchange must not malloc.
  const CallStamp stamp{kind, root};
  const auto stamp_bytes = std::as_bytes(std::span(&stamp, 1));
  if (!blob.empty()) blob.insert(blob.end(), stamp_bytes.begin(), stamp_bytes.end());
  const std::span<const std::byte> sent = blob.empty() ? stamp_bytes : std::span<const std::byte>(blob);
  // From the per-core pool, as above.
  const std::size_t others = members.populated.size() - 1;
  detail::PooledArray<SendTicket> sends(others);
  detail::PooledArray<Message> messages(others);
  detail::PooledArray<std::span<const std::byte>> remote(others);  // the shares, stamps taken off
  std::size_t k = 0;
  for (std::uint32_t w : members.populated) {
    if (w != here) sends.emplace(k++, [&] { return post_send_on(g, comm_rank_of(w), sent, tag, false); });
  }
  k = 0;
  for (std::uint32_t w : members.populated) {
    if (w == here) continue;
    RecvTicket t = post_recv_on(g, comm_rank_of(w), tag, {}, false);
    co_await RecvWaitAwaiter(*this, t, "the other cores to reach it, now that of");
    messages[k] = t.take_message();
    remote[k] = unstamped(messages[k].bytes(), stamp, g, seq, comm_rank_of(w));
    ++k;
  }
  co_await wait_all(sends.span());

  if (kind == kAllgather || kind == kAllgatherSplit || kind == kScan) {
    combine_ranked(slot, kind, g.size(), remote.span(), job_, members, here);
  } else if (kind == kAllreduce) {
    add_sums(slot.sum, remote.span());
    const auto* p = reinterpret_cast<const std::byte*>(slot.sum.data());
    slot.result.assign(p, p + slot.sum.size() * sizeof(std::int64_t));
  } else if (kind == kBroadcast && root_worker != here) {
    std::size_t i = 0;
    for (std::uint32_t w : members.populated) {
      if (w == here) continue;
      if (w == root_worker) slot.result.assign(remote[i].begin(), remote[i].end());
      ++i;
    }
  }
}

// --- on a communicator ---

BarrierCall Communicator::barrier() const { return BarrierCall(*process_, group(), rank_); }

Task<std::vector<std::byte>> Communicator::allgather(std::span<const std::byte> mine) const {
  return process_->collective<std::vector<std::byte>>(group(), rank_, kAllgather, mine, 0);
}

Task<std::vector<std::byte>> Communicator::allgather_split(std::span<const std::byte> mine, GatherSplit split) const {
  return [](Communicator c, std::span<const std::byte> v, GatherSplit f) -> Task<std::vector<std::byte>> {
    co_return co_await c.process_->collective<std::vector<std::byte>>(c.group(), c.rank_, kAllgatherSplit, v, 0, &f);
  }(*this, mine, std::move(split));
}

Task<std::vector<std::int64_t>> Communicator::allreduce(std::span<const std::int64_t> mine) const {
  return [](Communicator c, std::span<const std::int64_t> v) -> Task<std::vector<std::int64_t>> {
    co_return to_int64(
        co_await c.process_->collective<std::vector<std::byte>>(c.group(), c.rank_, kAllreduce, std::as_bytes(v), 0));
  }(*this, mine);
}

Task<std::vector<std::int64_t>> Communicator::exclusive_scan(std::span<const std::int64_t> mine) const {
  return [](Communicator c, std::span<const std::int64_t> v) -> Task<std::vector<std::int64_t>> {
    co_return to_int64(
        co_await c.process_->collective<std::vector<std::byte>>(c.group(), c.rank_, kScan, std::as_bytes(v), 0));
  }(*this, mine);
}

Task<std::vector<std::byte>> Communicator::broadcast(Rank root, std::span<const std::byte> bytes) const {
  process_->check_rank(group(), root, "broadcast root");
  return process_->collective<std::vector<std::byte>>(*group_, rank_, kBroadcast, bytes, root);
}

// --- on the world ---

void Process::release_core(detail::CoreCollective& slot, const std::vector<Process*>& local) {
  slot.complete = true;
  worker_.notify_each(local.begin(), local.end(), *this);
}

// --- BarrierCall ---

bool BarrierCall::await_ready() {
  if (step_ == Step::task) return task_.await_ready();
  Process& p = *process_;
  const detail::Group& g = *group_;
  if (p.trace_ || g.members().nodes_spanned != 1) [[unlikely]]
    return await_as_task();
  p.check_cancelled();
  // enter_call(), with the first member's path out of line and last: the
  // other arrivals' path then makes no call that returns, and saves no registers.
  seq_ = g.member(me_).collectives++;
  slot_ = &g.collective_slot(p.global_core_, seq_);
  if (!slot_open(*slot_, g, me_, seq_, kBarrier)) [[unlikely]]
    return first_of_core();
  return arrive_at_core();
}

bool BarrierCall::first_of_core() {
  open_slot(*slot_, *group_, process_->global_core_, seq_, kBarrier);
  return arrive_at_core();
}

inline bool BarrierCall::arrive_at_core() {
  contribute(*slot_, kBarrier, me_, 0, {});
  if (slot_->arrived < slot_->members) {
    step_ = Step::parked;
    return false;
  }
  return last_of_core();
}

bool BarrierCall::last_of_core() {
  Process& p = *process_;
  const detail::Group& g = *group_;
  const std::uint32_t here = p.global_core_;
  // Its word for the other cores, then theirs.
  store_reached(g, here, seq_, kBarrier);
  ring_other_cores(p.job_, g, here);
  const auto others_reached = [&] {
    return std::ranges::all_of(g.members().populated,
                               [&](std::uint32_t w) { return w == here || reached_by(g, w, kBarrier, seq_); });
  };
  if (!others_reached() && !p.worker_.wait_alone(others_reached)) {
    step_ = Step::last;
    return false;
  }
  p.release_core(*slot_, g.members().local[here]);
  step_ = Step::complete;
  return true;
}

std::coroutine_handle<> BarrierCall::await_suspend(std::coroutine_handle<> awaiter) {
  if (step_ == Step::task) return task_.await_suspend(awaiter);
  Process& p = *process_;
  if (step_ == Step::parked) {
    p.suspend_in(awaiter, &slot_->complete, "the other processes of its core and the other cores to reach it",
                 Process::Activity{activity_of(kBarrier), group_->context()});
    return std::noop_coroutine();
  }
  return wait_for_other_cores(awaiter);
}

std::coroutine_handle<> BarrierCall::wait_for_other_cores(std::coroutine_handle<> awaiter) {
  task_ = process_->reach_other_cores(*group_, kBarrier, seq_);
  return task_.await_suspend(awaiter);
}

void BarrierCall::await_resume() {
  if (step_ == Step::parked) [[likely]] {
    process_->left_call();
    process_->resumed();  // throws JobCancelled where the job was cancelled instead
    SWITCHYARD_ASSERT(slot_->complete);
    return;
  }
  if (step_ != Step::complete) resume_from_task();
}

void BarrierCall::resume_from_task() {
  task_.await_resume();
  if (step_ == Step::last) process_->release_core(*slot_, group_->members().local[process_->global_core_]);
}

// Across nodes, or traced: the collective's Task, made where it is awaited
// (the call as made holds the process, the group and the rank).
bool BarrierCall::await_as_task() {
  task_ = process_->collective<void>(*group_, me_, kBarrier, {}, 0);
  step_ = Step::task;
  return task_.await_ready();
}

BarrierCall::operator Task<void>() && {
  if (step_ == Step::task) return std::move(task_);
  return [](BarrierCall call) -> Task<void> { co_await call; }(std::move(*this));
}

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
