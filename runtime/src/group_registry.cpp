// The job's registry of groups: context ids, and the groups that dup, split
// and library make.

#include "group_registry.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <string>

#include "job.hpp"
#include "switchyard/assert.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::detail {

namespace {

constexpr std::size_t kSlots = GroupRegistry::kChunk * GroupRegistry::kChunks;

// The table slot where the search for context id `id` starts.
std::size_t home_slot(ContextId id) noexcept { return static_cast<std::size_t>(splitmix64(id)) % kSlots; }

// A freed group's slot: probed past, reused by the next insert. Never dereferenced.
const Group* const kTombstone = reinterpret_cast<const Group*>(alignof(Group));

}  // namespace

GroupRegistry::GroupRegistry(Job& job)
    : job_(job), nodes_(job.routes().nodes()), node_(job.node()), member_pages_(job.routes().global_cores()) {
  static_assert(ContextId{kMaxContexts} << 32 <= kDerivedIdBit, "allocated ids stay below the derived ones");
  std::vector<Rank> all(job.size());
  std::iota(all.begin(), all.end(), Rank{0});
  std::lock_guard lock(mutex_);
  if (node_ == 0) next_index_ = 1;  // index 0 of node 0 is the world's id, 0, on every node
  world_ = &make_group(0, membership(std::move(all)), 0);
}

GroupRegistry::~GroupRegistry() {
  for (auto& chunk : contexts_) delete[] chunk.load(std::memory_order_relaxed);
}

const Group* GroupRegistry::find(ContextId id) const noexcept {
  // Linear probing; a probe stops at a slot never filled. Live groups fill
  // half the table at most, and inserts reuse tombstones on their way, but
  // tombstones of ids never made again may fill the rest: a probe stops after
  // the whole table too.
  for (std::size_t i = home_slot(id), probes = 0; probes < kSlots; i = (i + 1) % kSlots, ++probes) {
    const Slot* chunk = contexts_[i / kChunk].load(std::memory_order_acquire);
    if (!chunk) return nullptr;
    const Slot& slot = chunk[i % kChunk];
    const Group* g = slot.group.load(std::memory_order_acquire);
    if (!g) return nullptr;
    if (g == kTombstone || slot.id.load(std::memory_order_acquire) != id) continue;
    // The id read is g's unless the slot was reused meanwhile (see Slot): then look again.
    if (slot.group.load(std::memory_order_acquire) != g) return find(id);
    return g;
  }
  return nullptr;
}

void GroupRegistry::insert(const Group* g) {
  for (std::size_t i = home_slot(g->context());; i = (i + 1) % kSlots) {
    auto& chunk = contexts_[i / kChunk];
    Slot* slots = chunk.load(std::memory_order_relaxed);
    if (!slots) {
      slots = new Slot[kChunk];
      chunk.store(slots, std::memory_order_release);
    }
    Slot& slot = slots[i % kChunk];
    const Group* there = slot.group.load(std::memory_order_relaxed);
    if (!there || there == kTombstone) {
      slot.id.store(g->context(), std::memory_order_release);
      slot.group.store(g, std::memory_order_release);
      ++in_table_;
      return;
    }
  }
}

void GroupRegistry::remove(ContextId id) {
  for (std::size_t i = home_slot(id);; i = (i + 1) % kSlots) {
    Slot& slot = contexts_[i / kChunk].load(std::memory_order_relaxed)[i % kChunk];
    const Group* g = slot.group.load(std::memory_order_relaxed);
    if (g != kTombstone && slot.id.load(std::memory_order_relaxed) == id) {
      slot.group.store(kTombstone, std::memory_order_release);
      --in_table_;
      return;
    }
  }
}

ContextId GroupRegistry::allocate_id() {
  std::lock_guard lock(mutex_);
  return allocate_id_locked();
}

ContextId GroupRegistry::allocate_id_locked() {
  std::uint32_t index;
  if (!free_indices_.empty()) {
    index = free_indices_.back();
    free_indices_.pop_back();
  } else {
    if (next_index_ >= kMaxContexts) {
      throw InvalidArgument("switchyard: node " + std::to_string(node_) + " has handed out all its " +
                            std::to_string(kMaxContexts) + " communicator ids: a job may hold at most " +
                            std::to_string(kMaxContexts) +
                            " communicators at once (the world, and every dup, "
                            "split and library duplicate not yet freed); free() those no longer needed");
    }
    index = next_index_++;
  }
  return ContextId{index} * nodes_ + node_;
}

void GroupRegistry::release_id(ContextId id) {
  if (id & kDerivedIdBit || id % nodes_ != node_) return;  // derived, or another node's to give back
  free_indices_.push_back(static_cast<std::uint32_t>(id / nodes_));
}

std::shared_ptr<const Membership> GroupRegistry::membership(std::vector<Rank> job_ranks) const {
  auto m = std::make_shared<Membership>();
  m->size = static_cast<Rank>(job_ranks.size());
  bool identity = job_ranks.size() == job_.size();
  for (Rank i = 0; identity && i < m->size; ++i) identity = job_ranks[i] == i;
  const RouteTable& routes = job_.routes();
  m->local.resize(routes.global_cores());
  m->leader.assign(routes.global_cores(), kAnySource);
  MemberCores& cores = m->cores;
  cores.core.resize(m->size);
  cores.index.resize(m->size);
  cores.count.assign(routes.global_cores(), 0);
  cores.here.assign(routes.global_cores(), false);
  std::vector<bool> node_seen(routes.nodes(), false);
  for (Rank i = 0; i < m->size; ++i) {
    const Route& route = routes[job_ranks[i]];
    node_seen[route.node] = true;
    const std::uint32_t g = routes.global_core(route);
    cores.core[i] = g;
    cores.index[i] = cores.count[g]++;
    cores.here[g] = route.node == job_.node();
    if (m->leader[g] == kAnySource) m->leader[g] = job_ranks[i];
    if (route.node == job_.node()) {
      m->local[g].push_back(&job_.process(job_ranks[i]));
      ++m->on_this_node;
    }
  }
  for (std::uint32_t g = 0; g < cores.count.size(); ++g) {
    if (cores.count[g] > 0) m->populated.push_back(g);
  }
  m->nodes_spanned = static_cast<std::uint32_t>(std::count(node_seen.begin(), node_seen.end(), true));
  if (!identity) {
    for (Rank i = 0; i < m->size; ++i) m->by_job_rank.emplace_back(job_ranks[i], i);
    std::sort(m->by_job_rank.begin(), m->by_job_rank.end());
    m->job_rank = std::move(job_ranks);
  }
  return m;
}

const Group& GroupRegistry::make_group(ContextId id, std::shared_ptr<const Membership> members,
                                       std::uint64_t library_key, bool counted) {
  if (counted && in_table_ - made_in_advance_ >= kMaxContexts) {
    throw InvalidArgument("switchyard: a job can hold at most " + std::to_string(kMaxContexts) +
                          " communicators at once on a node (the world, and every dup, split and library duplicate "
                          "not yet freed), and this one holds them all: free() those no longer needed");
  }
  auto owned = std::make_unique<Group>(id, std::move(members), library_key, member_pages_);
  const Group* g = owned.get();
  groups_.emplace(g, std::move(owned));
  insert(g);
  if (!counted) ++made_in_advance_;  // a library duplicate of the world's: never freed, never removed
  return *g;
}

const Group& GroupRegistry::dup(const Group& parent, std::uint64_t seq, ContextId id) {
  std::lock_guard lock(mutex_);
  auto it = dups_.try_emplace({parent.context(), seq}).first;
  PendingDup& pending = it->second;
  if (!pending.group) {
    pending.group = &make_group(id == kAllocate ? allocate_id_locked() : id, parent.shared_members(), 0);
  }
  const Group& g = *pending.group;
  if (++pending.taken == parent.members().on_this_node) dups_.erase(it);  // every member here has it
  return g;
}

ContextId GroupRegistry::library_id(const Group& parent, std::uint64_t key) {
  // A key's bit 0 is always set (LibraryKey), so key >> 1 keeps all it says,
  // and xor with a value of the parent's is one-to-one in it: one parent's
  // duplicates never meet.
  SWITCHYARD_ASSERT(key & 1);
  return kDerivedIdBit | (((key >> 1) ^ splitmix64(parent.context())) & (kDerivedIdBit - 1));
}

const Group& GroupRegistry::library(const Group& parent, std::uint64_t library_key) {
  if (const Group* g = parent.cached_library(library_key)) return *g;
  std::lock_guard lock(mutex_);
  return *library_locked(parent, library_key, false);
}

// Under mutex_. Made without communication, by whichever member asks first:
// on one node an id of its own; across nodes every node must name it alike
// without asking the others, so it is derived from (parent, key). One made
// in advance (make_libraries) is named so too, and takes no place under the
// limit: a job has all of the node's ids for itself, whatever the last one
// asked for. Made in advance, nullptr where that id is taken.
const Group* GroupRegistry::library_locked(const Group& parent, std::uint64_t library_key, bool in_advance) {
  const Group*& slot = libraries_[{parent.context(), library_key}];
  if (slot) return slot;
  ContextId id = 0;
  if (in_advance || parent.members().nodes_spanned > 1) {
    id = library_id(parent, library_key);
    if (find(id)) {
      libraries_.erase({parent.context(), library_key});
      if (in_advance) return nullptr;  // made when asked for, as any other
      throw Error("switchyard: the library duplicate of communicator " + std::to_string(parent.context()) +
                  " for library key " + std::to_string(library_key) + " would take the id " + std::to_string(id) +
                  " of a live library duplicate of another communicator: across nodes a library's duplicate is "
                  "named from (communicator, key) without communication, and two of different communicators "
                  "met (2^-63 a pair, as likely as two library names with one key). Use another key, free() "
                  "communicators no longer needed, or dup() the communicator (allocated, never colliding)");
    }
  } else {
    id = allocate_id_locked();
  }
  slot = &make_group(id, parent.shared_members(), library_key, !in_advance);
  parent.cache_library(slot);  // when the cache is full, later calls come back here
  note_world_library(parent, *slot);
  return slot;
}

// Under mutex_: g, parent's library duplicate, among the world's chains if
// parent is the world or one of them, within KeptLibraries' bounds.
void GroupRegistry::note_world_library(const Group& parent, const Group& g) {
  if (world_libraries_.size() >= KeptLibraries::kMaxChains) return;
  LibraryChain chain;
  if (&parent != world_) {
    const auto it = std::find_if(world_libraries_.begin(), world_libraries_.end(),
                                 [&](const auto& made) { return made.first == &parent; });
    if (it == world_libraries_.end() || it->second.size() >= KeptLibraries::kMaxDepth) return;
    chain = it->second;
  }
  chain.push_back(g.library_key());
  world_libraries_.emplace_back(&g, std::move(chain));
}

std::vector<LibraryChain> GroupRegistry::library_chains() {
  std::lock_guard lock(mutex_);
  std::vector<LibraryChain> chains;
  for (const auto& [g, chain] : world_libraries_) {
    if (g->asked()) chains.push_back(chain);
  }
  return chains;
}

void GroupRegistry::make_libraries(const std::vector<LibraryChain>& chains) {
  std::lock_guard lock(mutex_);
  for (const LibraryChain& chain : chains) {
    const Group* g = world_;
    for (std::size_t k = 0; k < chain.size() && g; ++k) g = library_locked(*g, chain[k], true);
  }
}

ContextId GroupRegistry::split_proposal(const Group& parent, std::uint64_t seq, std::int64_t color) {
  if (color == Communicator::kUndefined) return 0;
  std::lock_guard lock(mutex_);
  PendingSplit& split = splits_[{parent.context(), seq}];
  auto [it, fresh] = split.proposals.try_emplace(color, 0);
  if (fresh) it->second = allocate_id_locked();
  return it->second;
}

void GroupRegistry::build_split(const Group& parent, PendingSplit& split,
                                const std::vector<std::array<std::int64_t, 3>>& contributions) {
  // Members by (color, key, rank here): each run of one color is a new
  // communicator, ranked in that order, with the id its rank 0's node proposed.
  std::vector<Rank> order(parent.size());
  std::iota(order.begin(), order.end(), Rank{0});
  std::sort(order.begin(), order.end(), [&](Rank a, Rank b) {
    return std::tie(contributions[a][0], contributions[a][1], a) <
           std::tie(contributions[b][0], contributions[b][1], b);
  });
  split.result.assign(parent.size(), {nullptr, 0});
  for (std::size_t begin = 0; begin < order.size();) {
    const std::int64_t color = contributions[order[begin]][0];
    std::size_t end = begin;
    bool here = false;
    while (end < order.size() && contributions[order[end]][0] == color) {
      here |= job_.routes()[parent.members().to_job(order[end])].node == node_;
      ++end;
    }
    // A color with no member here is never used here: not built.
    if (color != Communicator::kUndefined && here) {
      const auto id = static_cast<ContextId>(contributions[order[begin]][2]);
      if (const auto mine = split.proposals.find(color); mine != split.proposals.end() && mine->second != id) {
        release_id(mine->second);  // never used: another node's id was taken
      }
      std::vector<Rank> job_ranks;
      for (std::size_t i = begin; i < end; ++i) job_ranks.push_back(parent.members().to_job(order[i]));
      const Group& g = make_group(id, membership(std::move(job_ranks)), 0);
      for (std::size_t i = begin; i < end; ++i) split.result[order[i]] = {&g, static_cast<Rank>(i - begin)};
    }
    begin = end;
  }
}

std::pair<const Group*, Rank> GroupRegistry::split(const Group& parent, std::uint64_t seq, Rank member,
                                                   std::span<const std::byte> contributions) {
  std::lock_guard lock(mutex_);
  auto it = splits_.try_emplace({parent.context(), seq}).first;
  PendingSplit& split = it->second;
  if (split.result.empty()) {
    std::vector<std::array<std::int64_t, 3>> gathered(parent.size());
    std::memcpy(gathered.data(), contributions.data(), parent.size() * kSplitContribution);
    build_split(parent, split, gathered);
  }
  const auto mine = split.result[member];
  if (++split.taken == parent.members().on_this_node) splits_.erase(it);
  return mine;
}

// --- freeing ---
//
// Communicator::free, by every member of g (collective), in three steps:
//  1. Until the members' counts of traffic on g's family balance (every
//     message, active message and busy-lock release sent on it has been taken
//     by a receive or run by a handler; no receive posted on it is pending):
//     the members are done with it, and no packet of theirs is in flight.
//  2. free_leave: the last member here takes the family out of the id table.
//     Then each member sends a last message on g to g's rank 0 (one that
//     has left the table here first, if it is the last).
//  3. free_finish, when the member is done with g: the last member here
//     deletes the family. g's rank 0 finishes only after every member's last
//     message reached it: every node has taken the family out of its table,
//     and every packet of step 1 and 2 has been taken by its receiver. Only
//     then are the ids given back (by g's rank 0's node, which handed out g's
//     id): a communicator made later with one of them meets no packet, posted
//     receive or table entry of the old one.

void GroupRegistry::collect_family(const Group& g, std::vector<const Group*>& out) const {
  out.push_back(&g);
  for (auto it = libraries_.lower_bound({g.context(), 0}); it != libraries_.end() && it->first.first == g.context();
       ++it) {
    collect_family(*it->second, out);
  }
}

std::vector<const Group*> GroupRegistry::family(const Group& g) {
  std::lock_guard lock(mutex_);
  std::vector<const Group*> out;
  collect_family(g, out);
  return out;
}

void GroupRegistry::free_leave(const Group& g) {
  std::lock_guard lock(mutex_);
  Freeing& f = freeing_[&g];
  if (++f.left < g.members().on_this_node) return;
  collect_family(g, f.family);
  for (const Group* member : f.family) {
    remove(member->context());
    auto it = libraries_.lower_bound({member->context(), 0});
    while (it != libraries_.end() && it->first.first == member->context()) it = libraries_.erase(it);
  }
}

void GroupRegistry::free_finish(const Group& g, bool release_ids) {
  std::lock_guard lock(mutex_);
  auto it = freeing_.find(&g);
  if (release_ids) {
    for (const Group* member : it->second.family) release_id(member->context());
  }
  if (++it->second.finished < g.members().on_this_node) return;
  for (const Group* member : it->second.family) groups_.erase(member);
  freeing_.erase(it);
}

}  // namespace switchyard::detail
