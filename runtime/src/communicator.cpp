// Communicators: groups, the job's registry of them, and the Communicator handle.

#include "switchyard/communicator.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "group.hpp"
#include "group_registry.hpp"
#include "job.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/splitmix64.hpp"
#include "worker.hpp"

namespace switchyard {

namespace detail {

// --- Membership and Group ---

Rank Membership::to_comm(Rank job) const noexcept {
  if (by_job_rank.empty()) return job < size ? job : kAnySource;
  auto it = std::lower_bound(by_job_rank.begin(), by_job_rank.end(), std::make_pair(job, Rank{0}));
  return it != by_job_rank.end() && it->first == job ? it->second : kAnySource;
}

Group::Group(ContextId context, std::shared_ptr<const Membership> members, std::uint64_t library_key, bool over_mpi)
    : context_(context),
      members_(std::move(members)),
      library_key_(library_key),
      over_mpi_(over_mpi),
      members_state_(std::make_unique<MemberState[]>(members_->size)),
      cores_(std::make_unique<CoreState[]>(members_->local.size())) {}

Group::~Group() {
  delete[] locks_.load(std::memory_order_relaxed);
  delete node_comm_.load(std::memory_order_relaxed);
}

BusyLock& Group::busy_lock(Rank comm_rank) const {
  BusyLock* locks = locks_.load(std::memory_order_acquire);
  if (!locks) {
    auto* made = new BusyLock[members_->size];
    if (locks_.compare_exchange_strong(locks, made, std::memory_order_acq_rel, std::memory_order_acquire)) {
      locks = made;
    } else {
      delete[] made;  // another process was first; `locks` now holds its array
    }
  }
  return locks[comm_rank];
}

const Group* Group::cached_library(std::uint64_t key) const noexcept {
  for (const auto& slot : libraries_) {
    const Group* g = slot.load(std::memory_order_acquire);
    if (!g) return nullptr;
    if (g->library_key() == key) return g;
  }
  return nullptr;
}

namespace {
std::size_t attachment_slot(std::uint64_t key, std::size_t probe) noexcept {
  return static_cast<std::size_t>(splitmix64(key) + probe) & (Group::kCachedAttachments - 1);
}
}  // namespace

GroupAttachment* Group::cached_attachment(std::uint64_t key) const noexcept {
  for (std::size_t probe = 0; probe < kCachedAttachments; ++probe) {
    const CachedAttachment& slot = attachment_cache_[attachment_slot(key, probe)];
    GroupAttachment* a = slot.value.load(std::memory_order_acquire);
    if (!a) return nullptr;
    if (slot.key.load(std::memory_order_relaxed) == key) return a;
  }
  return nullptr;
}

void Group::cache_attachment(std::uint64_t key, GroupAttachment* a) const noexcept {
  for (std::size_t probe = 0; probe < kCachedAttachments; ++probe) {
    CachedAttachment& slot = attachment_cache_[attachment_slot(key, probe)];
    if (!slot.value.load(std::memory_order_relaxed)) {
      slot.key.store(key, std::memory_order_relaxed);
      slot.value.store(a, std::memory_order_release);  // pairs with the acquire in cached_attachment
      return;
    }
  }
}

bool Group::cache_library(const Group* g) const noexcept {
  for (auto& slot : libraries_) {
    if (!slot.load(std::memory_order_relaxed)) {
      slot.store(g, std::memory_order_release);
      return true;
    }
  }
  return false;
}

// --- the registry ---

namespace {

// The table slot where the search for context id `id` starts.
std::size_t home_slot(ContextId id) noexcept {
  return static_cast<std::size_t>(splitmix64(id)) % (GroupRegistry::kChunk * GroupRegistry::kChunks);
}

}  // namespace

GroupRegistry::GroupRegistry(Job& job) : job_(job) {
  std::vector<Rank> all(job.size());
  std::iota(all.begin(), all.end(), Rank{0});
  std::lock_guard lock(mutex_);
  auto members = membership(std::move(all));
  // The world's NodeComm: a duplicate of the Runtime's, started here, where
  // every node builds its part of the job.
  const bool over_mpi = job.nodes().comm && job.options().mpi_collectives &&
                        members->nodes_spanned == job.routes().nodes() && job.routes().nodes() > 1;
  world_ = &make_group(std::move(members), 0, Key{0, Derivation::kDup, 0}, over_mpi);
  if (over_mpi) world_->set_node_comm(job.nodes().comm->start_dup());
}

GroupRegistry::~GroupRegistry() {
  for (auto& chunk : contexts_) delete[] chunk.load(std::memory_order_relaxed);
}

void GroupRegistry::complete_node_comms() {
  std::lock_guard lock(mutex_);
  for (const auto& g : groups_) {
    if (NodeComm* comm = g->node_comm()) comm->wait();
  }
}

const Group* GroupRegistry::find(ContextId id) const noexcept {
  // Linear probing; the table is at most half full, and a slot once filled stays so.
  for (std::size_t i = home_slot(id);; i = (i + 1) % (kChunk * kChunks)) {
    const auto* chunk = contexts_[i / kChunk].load(std::memory_order_acquire);
    if (!chunk) return nullptr;
    const Group* g = chunk[i % kChunk].load(std::memory_order_acquire);
    if (!g) return nullptr;
    if (g->context() == id) return g;
  }
}

std::shared_ptr<const Membership> GroupRegistry::membership(std::vector<Rank> job_ranks) const {
  auto m = std::make_shared<Membership>();
  m->size = static_cast<Rank>(job_ranks.size());
  bool identity = job_ranks.size() == job_.size();
  for (Rank i = 0; identity && i < m->size; ++i) identity = job_ranks[i] == i;
  const RouteTable& routes = job_.routes();
  m->local.resize(routes.global_cores());
  m->leader.assign(routes.global_cores(), kAnySource);
  m->local_index.resize(m->size);
  std::vector<std::uint32_t> count(routes.global_cores(), 0);
  std::vector<bool> node_seen(routes.nodes(), false);
  for (Rank i = 0; i < m->size; ++i) {
    const Route& route = routes[job_ranks[i]];
    node_seen[route.node] = true;
    const std::uint32_t g = routes.global_core(route);
    m->local_index[i] = count[g]++;
    if (m->leader[g] == kAnySource) m->leader[g] = job_ranks[i];
    if (route.node == job_.node()) {
      m->local[g].push_back(&job_.process(job_ranks[i]));
      ++m->on_this_node;
    }
  }
  for (std::uint32_t g = 0; g < count.size(); ++g) {
    if (count[g] == 0) continue;
    m->populated.push_back(g);
    if (routes.core_route(g).node == job_.node()) m->populated_here.push_back(g);
  }
  m->nodes_spanned = static_cast<std::uint32_t>(std::count(node_seen.begin(), node_seen.end(), true));
  if (!identity) {
    for (Rank i = 0; i < m->size; ++i) m->by_job_rank.emplace_back(job_ranks[i], i);
    std::sort(m->by_job_rank.begin(), m->by_job_rank.end());
    m->job_rank = std::move(job_ranks);
  }
  return m;
}

const Group& GroupRegistry::make_group(std::shared_ptr<const Membership> members, std::uint64_t library_key,
                                       const Key& key, bool over_mpi, std::int64_t color) {
  if (contexts_made_ >= kMaxContexts) {
    throw InvalidArgument("switchyard: a job can make at most " + std::to_string(kMaxContexts) +
                          " communicators (the world, and every dup, split and library duplicate), and this one has "
                          "made them all: a communicator lasts until its job ends");
  }
  const auto [parent, how, which] = key;
  // One node: the next id, handed out under mutex_, so no two communicators
  // ever share one. Across nodes every node must give a communicator the same
  // id without asking the others (a library's duplicate is made without
  // communication): derived from how it was made, and checked.
  ContextId id = static_cast<ContextId>(contexts_made_);  // the world's is 0
  if (contexts_made_ > 0 && job_.routes().nodes() > 1) {
    const std::uint64_t h = splitmix64(splitmix64(splitmix64((std::uint64_t{parent} << 8) | static_cast<std::uint8_t>(how)) ^
                                                  which) ^
                                       static_cast<std::uint64_t>(color));
    id = static_cast<ContextId>(h ^ (h >> 32));
    if (id == 0) id = 1;
    if (find(id)) {
      throw Error("switchyard: communicator context ids collide: in this job across nodes, communicator " +
                  std::to_string(contexts_made_ + 1) + " (derived from communicator id " + std::to_string(parent) +
                  ") got the 32-bit id " + std::to_string(id) + " of another. A job across nodes derives its ids from how "
                  "each communicator was made, without communication: after m communicators two share an id with a "
                  "chance of about m^2 / 2^33; a job on one node allocates them, up to " + std::to_string(kMaxContexts));
    }
  }
  ++contexts_made_;
  groups_.push_back(std::make_unique<Group>(id, std::move(members), library_key, over_mpi));
  const Group* g = groups_.back().get();
  for (std::size_t i = home_slot(id);; i = (i + 1) % (kChunk * kChunks)) {
    auto& chunk = contexts_[i / kChunk];
    auto* entries = chunk.load(std::memory_order_relaxed);
    if (!entries) {
      entries = new std::atomic<const Group*>[kChunk]();
      chunk.store(entries, std::memory_order_release);
    }
    if (!entries[i % kChunk].load(std::memory_order_relaxed)) {
      entries[i % kChunk].store(g, std::memory_order_release);
      break;
    }
  }
  return *g;
}

const Group& GroupRegistry::dup(const Group& parent, std::uint64_t seq) {
  std::lock_guard lock(mutex_);
  const Key key{parent.context(), Derivation::kDup, seq};
  const Group*& slot = derived_[key];
  if (!slot) slot = &make_group(parent.shared_members(), 0, key, parent.over_mpi());
  return *slot;
}

const Group& GroupRegistry::library(const Group& parent, std::uint64_t library_key) {
  if (const Group* g = parent.cached_library(library_key)) return *g;
  std::lock_guard lock(mutex_);
  const Key key{parent.context(), Derivation::kLibrary, library_key};
  const Group*& slot = derived_[key];
  if (!slot) {
    // No NodeComm: a library's duplicate is made without communication, by
    // whichever member asks first, so no point of the parent's order of
    // collectives could start one alike on every node.
    slot = &make_group(parent.shared_members(), library_key, key, false);
    parent.cache_library(slot);  // when the cache is full, later calls come back here
  }
  return *slot;
}

void GroupRegistry::build_split(const Group& parent, std::uint64_t seq, PendingSplit& split,
                                const std::vector<std::pair<std::int64_t, std::int64_t>>& contributions) {
  // Members by (color, key, rank here): each run of one color is a new
  // communicator, ranked in that order.
  std::vector<Rank> order(parent.size());
  std::iota(order.begin(), order.end(), Rank{0});
  std::sort(order.begin(), order.end(), [&](Rank a, Rank b) {
    return std::tie(contributions[a].first, contributions[a].second, a) <
           std::tie(contributions[b].first, contributions[b].second, b);
  });
  split.result.assign(parent.size(), {nullptr, 0});
  for (std::size_t begin = 0; begin < order.size();) {
    const std::int64_t color = contributions[order[begin]].first;
    std::size_t end = begin;
    while (end < order.size() && contributions[order[end]].first == color) ++end;
    if (color != Communicator::kUndefined) {
      std::vector<Rank> job_ranks;
      for (std::size_t i = begin; i < end; ++i) job_ranks.push_back(parent.members().to_job(order[i]));
      auto members = membership(std::move(job_ranks));
      const bool over_mpi = parent.over_mpi() && members->nodes_spanned == job_.routes().nodes();
      const Group& g =
          make_group(std::move(members), 0, Key{parent.context(), Derivation::kSplit, seq}, over_mpi, color);
      if (over_mpi) split.over_mpi.push_back(&g);
      for (std::size_t i = begin; i < end; ++i) split.result[order[i]] = {&g, static_cast<Rank>(i - begin)};
    }
    begin = end;
  }
}

std::pair<const Group*, Rank> GroupRegistry::split(const Group& parent, std::uint64_t seq, Rank member,
                                                   std::span<const std::byte> colors_and_keys,
                                                   std::vector<const Group*>* over_mpi) {
  std::lock_guard lock(mutex_);
  auto [it, fresh] = splits_.try_emplace({parent.context(), seq});
  PendingSplit& split = it->second;
  if (fresh) {
    std::vector<std::pair<std::int64_t, std::int64_t>> contributions(parent.size());
    for (Rank i = 0; i < parent.size(); ++i) {
      const std::byte* at = colors_and_keys.data() + i * 2 * sizeof(std::int64_t);
      std::memcpy(&contributions[i].first, at, sizeof(std::int64_t));
      std::memcpy(&contributions[i].second, at + sizeof(std::int64_t), sizeof(std::int64_t));
    }
    build_split(parent, seq, split, contributions);
  }
  const auto mine = split.result[member];
  if (over_mpi) *over_mpi = split.over_mpi;
  if (++split.taken == parent.members().on_this_node) splits_.erase(it);
  return mine;
}

}  // namespace detail

// --- Communicator ---

Communicator::Communicator(Process& p) noexcept : Communicator(p.world()) {}

void Communicator::not_valid() const {
  if (!group_) throw InvalidArgument("switchyard: a null communicator (from split with kUndefined, or default-made)");
  // Nothing of the job is read: once it has ended, its processes and groups are gone.
  const std::string here = detail::running_job == 0 ? "on a thread outside every job"
                                                    : "in job " + std::to_string(detail::running_job);
  throw InvalidArgument("switchyard: a communicator of job " + std::to_string(job_) + " (rank " +
                        std::to_string(rank_) + ") used " + here + ": job " + std::to_string(job_) +
                        " has ended, or runs elsewhere; a communicator is valid only in the processes of the job "
                        "that made it");
}

Rank Communicator::size() const { return group().size(); }
std::uint32_t Communicator::nodes() const { return group().members().nodes_spanned; }
ContextId Communicator::context() const { return group().context(); }
Process& Communicator::process() const {
  group();
  return *process_;
}

Rank Communicator::job_rank(Rank r) const {
  process_->check_rank(group(), r, "job_rank");
  return group_->members().to_job(r);
}

Rank Communicator::rank_of_job_rank(Rank job) const { return group().members().to_comm(job); }

void Communicator::post_active(Rank dst, HandlerId handler, std::span<const std::byte> body) const {
  process_->post_active_on(group(), dst, handler, body);
}
Task<void> Communicator::send_active(Rank dst, HandlerId handler, std::span<const std::byte> body) const {
  return process_->send_active_on(group(), dst, handler, body);
}

Process::BusyLockAwaiter Communicator::try_busy_lock(Rank r) const { return process_->try_busy_lock_on(group(), r); }
void Communicator::release_busy_lock(Rank r) const { process_->release_busy_lock_on(group(), r); }

BusyLock* Communicator::busy_lock_if_local(Rank r) const {
  process_->check_rank(group(), r, "busy_lock");
  return process_->on_this_node(group_->members().to_job(r)) ? &group_->busy_lock(r) : nullptr;
}

BusyLock& Communicator::busy_lock(Rank r) const {
  BusyLock* lock = busy_lock_if_local(r);
  if (!lock) {
    throw InvalidArgument("switchyard: busy_lock on rank " + std::to_string(process_->rank()) + ": rank " +
                          std::to_string(r) + " lives on another node, which alone holds its lock "
                          "(try_busy_lock and release_busy_lock reach it)");
  }
  return *lock;
}

Task<Communicator> Communicator::dup() const {
  return [](Communicator c) -> Task<Communicator> {
    const detail::Group& parent = c.group();
    c.process_->check_cancelled();
    const std::uint64_t seq = parent.member(c.rank_).derived++;
    const detail::Group* g = &c.process_->job_.groups().dup(parent, seq);
    if (parent.over_mpi()) co_await c.process_->start_node_comms(parent, std::span(&g, 1));
    co_return Communicator(c.process_, g, c.rank_);
  }(*this);
}

Task<Communicator> Communicator::split(std::int64_t color, std::int64_t key) const {
  return [](Communicator c, std::int64_t color, std::int64_t key) -> Task<Communicator> {
    const detail::Group& parent = c.group();
    c.process_->check_cancelled();
    const std::uint64_t seq = parent.member(c.rank_).derived++;
    const std::pair<std::int64_t, std::int64_t> mine{color, key};
    const std::vector<std::byte> all = co_await c.allgather(std::as_bytes(std::span(&mine, 1)));
    std::vector<const detail::Group*> over_mpi;
    const auto [g, rank] = c.process_->job_.groups().split(parent, seq, c.rank_, all, &over_mpi);
    if (!over_mpi.empty()) co_await c.process_->start_node_comms(parent, over_mpi);
    co_return g ? Communicator(c.process_, g, rank) : Communicator();
  }(*this, color, key);
}

Communicator Communicator::library(LibraryKey key) const {
  const detail::Group& parent = group();  // checked before process_ is read
  return Communicator(process_, &process_->job_.groups().library(parent, key.value()), rank_);
}


}  // namespace switchyard
