#pragma once
// What a communicator is inside the runtime: a context id, which processes are
// in it (immutable once built, shared by every duplicate), and the state its
// members keep for it (collective slots, sequence numbers, busy locks).
//
// Thread model. A Group is built once, under the job's registry mutex, and then
// published to other threads through that mutex or through an acquire load of
// one of the atomics below. Its immutable part is read by every thread. Its
// mutable part is split by who writes it: `member(r)` only by member r's
// process (so only on r's core), `core(w)` only by worker w's thread; each is a
// cache line of its own so that cores never write the same line.

#include <oneapi/tbb/spin_mutex.h>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "collective_kind.hpp"
#include "member_lines.hpp"
#include "switchyard/busy_lock.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/message.hpp"
#include "worker_mutex.hpp"

namespace switchyard {
class Process;
}

namespace switchyard::detail {

// Per-core state of one collective call, shared by the members of one core.
struct CoreCollective {
  std::uint64_t seq = ~std::uint64_t{0};
  CollectiveKind kind = CollectiveKind::kNone;
  std::uint32_t arrived = 0;
  std::uint32_t members = 0;  // the communicator's members on this core: the call is complete here once all arrived
  Rank root = 0;  // a broadcast's, as its first member here named it
  bool complete = false;
  std::vector<std::pair<Rank, std::vector<std::byte>>> contributions;  // local members' inputs, by comm rank
  std::vector<std::int64_t> sum;  // allreduce: local partial sum
  std::vector<std::byte> result;  // shared result bytes
  std::vector<std::vector<std::byte>> per_member;  // exclusive scan: result per local member
};

// Who is in a communicator, and where. Immutable; duplicates share it.
struct Membership {
  Rank size = 0;
  // comm rank -> job rank; empty: the identity (the world and its duplicates).
  std::vector<Rank> job_rank;
  // (job rank, comm rank) sorted by job rank, for the way back; empty for the identity.
  std::vector<std::pair<Rank, Rank>> by_job_rank;
  // Per core of the job (RouteTable::global_core): the members on it in
  // comm-rank order, for the cores of this node only (another node's are
  // empty here). The first one is the core's leader in collectives.
  std::vector<std::vector<Process*>> local;
  // Per core of the job: the job rank of its leader (kAnySource: no member there).
  std::vector<Rank> leader;
  // Per comm rank: its core, and its position among the members of its core.
  MemberCores cores;
  // Cores of the job with at least one member, ascending.
  std::vector<std::uint32_t> populated;
  // Members on this node, and nodes with at least one member.
  Rank on_this_node = 0;
  std::uint32_t nodes_spanned = 0;

  Rank to_job(Rank comm_rank) const noexcept { return job_rank.empty() ? comm_rank : job_rank[comm_rank]; }
  // kAnySource if `job` is not a member.
  Rank to_comm(Rank job) const noexcept;
};

// State that a part of the runtime keeps per communicator and key (a
// compiled exchange's slots), made by whichever member asks first and freed
// with the group at the end of the job.
class GroupAttachment {
 public:
  virtual ~GroupAttachment() = default;
};

class Group {
 public:
  static constexpr std::size_t kCachedLibraries = 8;
  static constexpr std::size_t kCachedAttachments = 64;  // a power of two: an open-addressed table

  // `pages`: the job's, which its members' lines come from (the job's registry holds both).
  Group(ContextId context, std::shared_ptr<const Membership> members, std::uint64_t library_key, MemberPages& pages);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  ContextId context() const noexcept { return context_; }
  const Membership& members() const noexcept { return *members_; }
  std::shared_ptr<const Membership> shared_members() const noexcept { return members_; }
  Rank size() const noexcept { return members_->size; }
  std::uint64_t library_key() const noexcept { return library_key_; }
  // A library duplicate some process asked for in this job
  // (Communicator::library): what the Runtime keeps for its next job
  // (kept_libraries.hpp), where one made up front and never asked for is
  // not. Loaded before it is stored, so that the group's line is written once
  // a job, not by every run of a plan. Relaxed: read by the job's host thread
  // after its workers have left the job.
  void note_asked() const noexcept {
    if (!asked_.load(std::memory_order_relaxed)) asked_.store(true, std::memory_order_relaxed);
  }
  bool asked() const noexcept { return asked_.load(std::memory_order_relaxed); }

  // Written only by member r's process.
  struct alignas(kCacheLine) MemberState {
    std::uint64_t collectives = 0;  // collective calls made on this communicator
    std::uint64_t derived = 0;  // dup and split calls made on this communicator
  };
  static_assert(kOwnsCacheLines<MemberState>, "shared across cores: cache lines of its own");
  MemberState& member(Rank comm_rank) const noexcept { return members_state_[comm_rank]; }

  // The job's pages, which every array of this communicator's member lines takes its lines from.
  MemberPages& member_pages() const noexcept { return member_pages_; }

  // Written only by worker w's thread: the two collective slots of its core,
  // and what free() counts there.
  struct alignas(kCacheLine) CoreState {
    CoreCollective slots[2];
    // Messages, active messages and busy-lock releases its members sent on
    // this communicator, less the receives they posted and the handlers and
    // releases run for them (a receive withdrawn unmatched counts back).
    std::int64_t traffic = 0;
    // free(): its members that have come to the current round of counting.
    std::uint32_t freeing = 0;
  };
  static_assert(kOwnsCacheLines<CoreState>, "shared across cores: cache lines of its own");
  CoreCollective& collective_slot(std::uint32_t worker, std::uint64_t seq) const noexcept {
    return cores_[worker].slots[seq & 1];
  }
  CoreState& core(std::uint32_t worker) const noexcept { return cores_[worker]; }

  // Per core, the collective call its leader has reached on this
  // communicator: (seq + 1) << 8 | kind, 0 before the first. Stored (release)
  // by that core's leader alone, once its members have all arrived; loaded
  // (acquire) by the other cores' leaders of a communicator within one node,
  // which then see everything the core's members did before the call: a
  // barrier's one cross-core handshake per core. On a line of its own: the
  // other cores poll it while its core's slots change.
  static constexpr unsigned kReachedKindBits = 8;
  // The word of call `call` (seq + 1) of kind `kind`, and its two parts back.
  static constexpr std::uint64_t reached_word(std::uint64_t call, CollectiveKind kind) noexcept {
    return (call << kReachedKindBits) | static_cast<std::uint64_t>(kind);
  }
  static constexpr std::uint64_t reached_call(std::uint64_t word) noexcept { return word >> kReachedKindBits; }
  static constexpr CollectiveKind reached_kind(std::uint64_t word) noexcept {
    return static_cast<CollectiveKind>(word & ((std::uint64_t{1} << kReachedKindBits) - 1));
  }
  // The lowest word of call `call`, whatever its kind: a wait for the call waits for it.
  static constexpr std::uint64_t first_word_of(std::uint64_t call) noexcept { return call << kReachedKindBits; }
  struct alignas(kCacheLine) CoreReached {
    std::atomic<std::uint64_t> call{0};
  };
  static_assert(kOwnsCacheLines<CoreReached>, "polled by the other cores");
  std::atomic<std::uint64_t>& reached(std::uint32_t worker) const noexcept { return reached_[worker].call; }

  // The members' busy locks, made on first use (by whichever process asks first).
  BusyLock& busy_lock(Rank comm_rank) const;

  // The attachment of `key`, made by make(n) (returning a
  // std::unique_ptr<GroupAttachment>; n: the group's attachments with this
  // one, which make() may refuse by throwing) if this is the first call for
  // the key. Lock-free once made, for the first kCachedAttachments keys.
  template <class Make>
  GroupAttachment& attachment(std::uint64_t key, Make&& make) const {
    if (GroupAttachment* a = cached_attachment(key)) return *a;
    std::lock_guard lock(attachments_mutex_);
    auto it = attachments_.find(key);
    if (it == attachments_.end()) {
      std::unique_ptr<GroupAttachment> made = make(attachments_.size() + 1);
      it = attachments_.emplace(key, std::move(made)).first;
      cache_attachment(key, it->second.get());
    }
    return *it->second;
  }

  // The duplicate reserved for a library, if it was made and cached here.
  // Inline: every compiled run of a plan asks for its library's duplicate.
  const Group* cached_library(std::uint64_t key) const noexcept {
    for (const auto& slot : libraries_) {
      const Group* g = slot.load(std::memory_order_acquire);  // pairs with the release in cache_library()
      if (!g) return nullptr;
      if (g->library_key() == key) return g;
    }
    return nullptr;
  }
  // Caches it; called under the job's registry mutex. False if the cache is full.
  bool cache_library(const Group* g) const noexcept;

 private:
  const ContextId context_;
  const std::shared_ptr<const Membership> members_;
  const std::uint64_t library_key_;  // nonzero: this is the duplicate a library reserved of another group
  mutable std::atomic<bool> asked_{false};  // note_asked()
  MemberPages& member_pages_;
  MemberLines<MemberState> members_state_;
  std::unique_ptr<CoreState[]> cores_;
  std::unique_ptr<CoreReached[]> reached_;
  // Set once by the first process to ask; acquire pairs with the release of the
  // successful compare-exchange, so whoever sees the pointer sees the locks built.
  mutable std::atomic<BusyLock*> locks_{nullptr};
  // Filled under the registry mutex, read without it: a release store per
  // entry, after the group it names is fully built, pairs with the acquire
  // load in cached_library().
  mutable std::atomic<const Group*> libraries_[kCachedLibraries] = {};

  GroupAttachment* cached_attachment(std::uint64_t key) const noexcept;
  void cache_attachment(std::uint64_t key, GroupAttachment* a) const noexcept;  // under attachments_mutex_
  // The cache of attachments, open-addressed by the key's hash with linear
  // probing: a slot's key is stored (relaxed) before its value (release); a
  // reader that acquires a non-null value sees its key. Slots are filled under
  // attachments_mutex_ and never emptied while the group lives, so a probe
  // that meets an empty slot may stop.
  struct CachedAttachment {
    std::atomic<std::uint64_t> key{0};
    std::atomic<GroupAttachment*> value{nullptr};
  };
  mutable CachedAttachment attachment_cache_[kCachedAttachments];
  // Guards attachments_. It spins, where a WorkerMutex would sleep: it is
  // held while a compiled exchange's state is made, in the exchange's first
  // run in a job, and a member of another core that slept on it woke well
  // after it was free (a futex wake-up on a virtual machine), on the run's
  // critical path (docs/benchmarks.md, "A plan's first run in a job").
  mutable tbb::spin_mutex attachments_mutex_;
  mutable std::map<std::uint64_t, std::unique_ptr<GroupAttachment>> attachments_;  // owns them all
};

}  // namespace switchyard::detail
