#pragma once
// Every communicator of a job: the world, and those derived from it by dup,
// split and library(). A derived communicator is found by what it derives from
// (parent context, which call), so every member that makes the same call gets
// the same Group, whichever member arrives first to build it. The id -> Group
// table is read without a lock by every worker, to find the communicator of an
// arriving active message or busy-lock request.
//
// Context ids are allocated, never hashed, but for one case (below). Each node
// hands out ids of its own class: index * nodes + node, the index from the
// node's free list (so the world, index 0 of node 0, is 0, and a job on one
// node numbers 0, 1, 2, ...). A new communicator takes an id handed out by the
// node of its rank 0, and every member learns it in the collective that makes
// it: a split's allgather carries each member's node's id for its color (the
// new rank 0's is taken, the others given back); a dup across nodes broadcasts
// its rank 0's. No two live communicators of a job share an id, whatever the
// order in which they are made on each node.
//
// The one exception: a library's duplicate of a communicator that spans
// nodes, made without communication by whichever member asks (possibly on
// one node only), is named by every node alike from its key and its parent's
// id (library_id): the top bit set, the key's 63 bits in the rest, mixed with
// the parent's. Two duplicates of one communicator never share an id (they
// have different keys); duplicates of two communicators could (2^-63 a pair,
// as likely as two library names with one LibraryKey), and are refused, named.
//
// Freed communicators (Communicator::free) give their ids back: the protocol,
// and why no packet of the old communicator can reach the new one, is at
// free_leave() and in communicator.cpp.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "group.hpp"
#include "kept_libraries.hpp"
#include "worker_mutex.hpp"

namespace switchyard::detail {

class Job;

class GroupRegistry {
 public:
  // The id table: two-level so that it never moves, and half full at most.
  // A chunk is a page: a job's first library duplicate (made inside its first
  // run of a plan) zeroes one page, not eight.
  static constexpr std::size_t kChunk = 256;
  static constexpr std::size_t kChunks = 512;
  // Communicators a node holds at once (the world, and every dup, split and
  // library duplicate not yet freed): the documented limit.
  static constexpr std::size_t kMaxContexts = kChunk * kChunks / 2;
  // Ids of library duplicates across nodes have it; allocated ids (index *
  // nodes + node, below 2^16 * 2^32) never do.
  static constexpr ContextId kDerivedIdBit = ContextId{1} << 63;

  explicit GroupRegistry(Job& job);
  ~GroupRegistry();

  const Group& world() const noexcept { return *world_; }
  // The group of a context id, or nullptr if there is none (yet, or any more).
  const Group* find(ContextId id) const noexcept;

  // A fresh id of this node's class (InvalidArgument past kMaxContexts).
  ContextId allocate_id();
  // The seq-th dup of parent (seq: the caller's count of dup and split calls
  // on it), with context `id` (kAllocate: allocated here, for a parent on one node).
  static constexpr ContextId kAllocate = ~ContextId{0};
  const Group& dup(const Group& parent, std::uint64_t seq, ContextId id);
  // parent's duplicate reserved for a library key.
  const Group& library(const Group& parent, std::uint64_t key);
  // The library duplicates chained from the world that this job's processes
  // asked for (at most KeptLibraries' bounds), for the next job; and those
  // made now, before any process runs, as an earlier job's.
  std::vector<LibraryChain> library_chains();
  void make_libraries(const std::vector<LibraryChain>& chains);
  // The id this node proposes for the members of `color` in the seq-th split
  // of parent: the same for every member of this node with that color.
  ContextId split_proposal(const Group& parent, std::uint64_t seq, std::int64_t color);
  // split, once every member's (color, key, proposal) has been gathered (by an
  // allgather on the parent, over every node): member's new group (nullptr
  // for kUndefined) and its rank in it. The first member of this node to ask
  // builds the groups of the colors with members here.
  std::pair<const Group*, Rank> split(const Group& parent, std::uint64_t seq, Rank member,
                                      std::span<const std::byte> contributions);
  static constexpr std::size_t kSplitContribution = 3 * sizeof(std::int64_t);  // color, key, proposal

  // Freeing g (Communicator::free), by each of its members on this node:
  // the groups freed with it (g and the library duplicates made of it, and
  // of those, on this node).
  std::vector<const Group*> family(const Group& g);
  // Once the member knows no packet of g's family is in flight: the last
  // member here takes the family out of the id table.
  void free_leave(const Group& g);
  // When the member is done with g: the last member here deletes the family;
  // g's rank 0 (`release_ids`, called once every member has left) gives
  // their ids back.
  void free_finish(const Group& g, bool release_ids);

  // Who is in a communicator whose comm rank i is job rank job_ranks[i].
  std::shared_ptr<const Membership> membership(std::vector<Rank> job_ranks) const;

 private:
  struct PendingSplit {
    std::vector<std::pair<const Group*, Rank>> result;  // per member of the parent
    Rank taken = 0;  // by the parent's members on this node
    std::map<std::int64_t, ContextId> proposals;  // this node's, by color
  };
  struct PendingDup {
    const Group* group = nullptr;
    Rank taken = 0;  // by the parent's members on this node
  };
  struct Freeing {
    Rank left = 0, finished = 0;  // members of this node
    std::vector<const Group*> family;  // once taken out of the table
  };

  // Under mutex_: a new group with context id `id`, in the table; counted
  // against kMaxContexts unless it is made in advance (make_libraries).
  const Group& make_group(ContextId id, std::shared_ptr<const Membership> members, std::uint64_t library_key,
                          bool counted = true);
  const Group* library_locked(const Group& parent, std::uint64_t library_key, bool in_advance);
  ContextId allocate_id_locked();
  void release_id(ContextId id);
  void insert(const Group* g);
  void remove(ContextId id);
  static ContextId library_id(const Group& parent, std::uint64_t key);
  void note_world_library(const Group& parent, const Group& g);
  void build_split(const Group& parent, PendingSplit& split,
                   const std::vector<std::array<std::int64_t, 3>>& contributions);
  void collect_family(const Group& g, std::vector<const Group*>& out) const;

  Job& job_;
  const std::uint32_t nodes_, node_;
  const Group* world_ = nullptr;
  MemberPages member_pages_;  // the groups' member lines: made before them, gone after them
  WorkerMutex mutex_;  // guards everything below
  std::unordered_map<const Group*, std::unique_ptr<Group>> groups_;
  std::map<std::pair<ContextId, std::uint64_t>, PendingDup> dups_;
  std::map<std::pair<ContextId, std::uint64_t>, const Group*> libraries_;  // (parent, key)
  std::map<std::pair<ContextId, std::uint64_t>, PendingSplit> splits_;
  std::unordered_map<const Group*, Freeing> freeing_;
  std::vector<std::uint32_t> free_indices_;  // of this node's class, given back
  std::uint32_t next_index_ = 0;  // never handed out yet from here up
  std::size_t in_table_ = 0;
  std::size_t made_in_advance_ = 0;  // of those in the table: library duplicates made in advance
  // Slot i of the id table is contexts_[i / kChunk][i % kChunk]. A slot is
  // empty (group null: a probe stops), a tombstone (kTombstone: a freed
  // group's, probed past, reused by the next insert) or live. Writers (under
  // mutex_) store a slot's id, then its group, both release; a reader loads
  // the group, the id, and the group again, all acquire, and takes the group
  // only if both group loads agree: a slot reused between them (tombstone,
  // id, group) is seen as changed, so the id read belongs to the group
  // returned. A reader never dereferences a group it does not return, so a
  // freed group probed past is never touched. Chunks are allocated under
  // mutex_ and published with a release store, read with acquire.
  struct Slot {
    std::atomic<ContextId> id{0};
    std::atomic<const Group*> group{nullptr};
  };
  std::array<std::atomic<Slot*>, kChunks> contexts_{};
  // The library duplicates chained from the world, in the order made (a
  // duplicate's parent before it), each with its chain.
  std::vector<std::pair<const Group*, LibraryChain>> world_libraries_;
};

}  // namespace switchyard::detail
