// The job's registry of groups: context ids, and the groups that dup, split
// and library make.

#include "group_registry.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "job.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::detail {

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
  world_ = &make_group(membership(std::move(all)), 0, Key{0, Derivation::kDup, 0});
}

GroupRegistry::~GroupRegistry() {
  for (auto& chunk : contexts_) delete[] chunk.load(std::memory_order_relaxed);
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
    if (count[g] > 0) m->populated.push_back(g);
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
                                       const Key& key, std::int64_t color) {
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
  groups_.push_back(std::make_unique<Group>(id, std::move(members), library_key));
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
  if (!slot) slot = &make_group(parent.shared_members(), 0, key);
  return *slot;
}

const Group& GroupRegistry::library(const Group& parent, std::uint64_t library_key) {
  if (const Group* g = parent.cached_library(library_key)) return *g;
  std::lock_guard lock(mutex_);
  const Key key{parent.context(), Derivation::kLibrary, library_key};
  const Group*& slot = derived_[key];
  if (!slot) {
    slot = &make_group(parent.shared_members(), library_key, key);
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
      const Group& g =
          make_group(membership(std::move(job_ranks)), 0, Key{parent.context(), Derivation::kSplit, seq}, color);
      for (std::size_t i = begin; i < end; ++i) split.result[order[i]] = {&g, static_cast<Rank>(i - begin)};
    }
    begin = end;
  }
}

std::pair<const Group*, Rank> GroupRegistry::split(const Group& parent, std::uint64_t seq, Rank member,
                                                   std::span<const std::byte> colors_and_keys) {
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
  if (++split.taken == parent.members().on_this_node) splits_.erase(it);
  return mine;
}

}  // namespace switchyard::detail
