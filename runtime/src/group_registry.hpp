#pragma once
// Every communicator of a job: the world, and those derived from it by dup,
// split and library(). A derived communicator is found by what it derives from
// (parent context, how, which call), so every member that makes the same call
// gets the same Group, whichever member arrives first to build it. Context ids
// are handed out densely from 0 (the world) in a job on one node; across nodes
// they are derived from the key (make_group). The id -> Group table is read
// without a lock by every worker, to find the communicator of an arriving
// active message.

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "group.hpp"

namespace switchyard::detail {

class Job;

class GroupRegistry {
 public:
  // The id table: two-level so that it never moves, and half full at most.
  static constexpr std::size_t kChunk = 2048;
  static constexpr std::size_t kChunks = 64;
  static constexpr std::size_t kMaxContexts = kChunk * kChunks / 2;

  explicit GroupRegistry(Job& job);
  ~GroupRegistry();

  const Group& world() const noexcept { return *world_; }
  // The group of a context id, or nullptr if there is none (yet).
  const Group* find(ContextId id) const noexcept;
  // Job rank `job` as the communicator of `context` numbers it: how a
  // receive or a handler names the sender of what arrived on that context.
  Rank rank_in(ContextId context, Rank job) const noexcept {
    return context == 0 ? job : find(context)->members().to_comm(job);  // the world numbers as the job does
  }

  // The seq-th dup of parent (seq: the caller's count of dup and split calls on it).
  const Group& dup(const Group& parent, std::uint64_t seq);
  // parent's duplicate reserved for a library key.
  const Group& library(const Group& parent, std::uint64_t key);
  // split, once every member's (color, key) has been gathered (by an
  // allgather on the parent, over every node): member's new group (nullptr
  // for kUndefined) and its rank in it. The first member of this node to ask
  // builds the groups of every color.
  std::pair<const Group*, Rank> split(const Group& parent, std::uint64_t seq, Rank member,
                                      std::span<const std::byte> colors_and_keys);

  // Who is in a communicator whose comm rank i is job rank job_ranks[i].
  std::shared_ptr<const Membership> membership(std::vector<Rank> job_ranks) const;

 private:
  enum class Derivation : std::uint8_t { kDup, kLibrary, kSplit };
  using Key = std::tuple<ContextId, Derivation, std::uint64_t>;
  struct PendingSplit {
    std::vector<std::pair<const Group*, Rank>> result;  // per member of the parent
    Rank taken = 0;                                     // by the parent's members on this node
  };

  // Under mutex_: a new group with the next context id (across nodes: derived
  // from `key`, and `color` for a split).
  const Group& make_group(std::shared_ptr<const Membership> members, std::uint64_t library_key, const Key& key,
                          std::int64_t color = 0);
  void build_split(const Group& parent, std::uint64_t seq, PendingSplit& split,
                   const std::vector<std::pair<std::int64_t, std::int64_t>>& contributions);

  Job& job_;
  const Group* world_ = nullptr;
  std::mutex mutex_;  // guards everything below
  std::deque<std::unique_ptr<Group>> groups_;
  std::map<Key, const Group*> derived_;
  std::map<std::pair<ContextId, std::uint64_t>, PendingSplit> splits_;
  std::size_t contexts_made_ = 0;
  // Slot i of the id table is contexts_[i / kChunk][i % kChunk]. Chunks are
  // allocated under mutex_ and published with a release store; a chunk's
  // entries likewise, once their group is built. Readers use acquire loads
  // (find()), which pair with them: whoever finds a group sees it whole.
  std::array<std::atomic<std::atomic<const Group*>*>, kChunks> contexts_{};
};

}  // namespace switchyard::detail
