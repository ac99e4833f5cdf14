// halo_map_create: each member's map from what every member owns and needs,
// found with one allgather_split. Every core gathers all the lists once,
// builds the directory of owners, and cuts for each of its members the ghosts
// it receives and the entries it sends: O(cores x total indices), never a
// copy per member.

#include <algorithm>
#include <cstring>
#include <string>

#include "switchyard/errors.hpp"
#include "switchyard/halo/halo_exchange.hpp"

namespace switchyard::halo {

namespace {

inline constexpr LibraryKey kHaloLibrary{"switchyard.halo"};

// The words of one member's contribution: its counts, then its lists.
struct MemberLists {
  const std::byte* owned = nullptr;
  const std::byte* needed = nullptr;
  std::uint64_t owned_count = 0, needed_count = 0;
};

std::uint64_t word_at(const std::byte* p, std::uint64_t i) {
  std::uint64_t v;
  std::memcpy(&v, p + i * sizeof v, sizeof v);
  return v;
}

std::vector<MemberLists> parse_lists(std::span<const std::byte> gathered, Rank n) {
  std::vector<MemberLists> lists(n);
  const std::byte* p = gathered.data();
  for (Rank r = 0; r < n; ++r) {
    MemberLists& l = lists[r];
    l.owned_count = word_at(p, 0);
    l.needed_count = word_at(p, 1);
    l.owned = p + 2 * sizeof(std::uint64_t);
    l.needed = l.owned + l.owned_count * sizeof(std::uint64_t);
    p = l.needed + l.needed_count * sizeof(std::uint64_t);
  }
  return lists;
}

// (global index, owner), sorted; an index owned twice is refused.
std::vector<std::pair<GlobalIndex, Rank>> directory_of(const std::vector<MemberLists>& lists) {
  std::vector<std::pair<GlobalIndex, Rank>> dir;
  for (Rank r = 0; r < lists.size(); ++r) {
    for (std::uint64_t i = 0; i < lists[r].owned_count; ++i) dir.emplace_back(word_at(lists[r].owned, i), r);
  }
  std::sort(dir.begin(), dir.end());
  for (std::size_t k = 1; k < dir.size(); ++k) {
    if (dir[k].first == dir[k - 1].first) {
      throw InvalidArgument(
          "switchyard: HaloExchange::create: global index " + std::to_string(dir[k].first) + " is owned by rank " +
          std::to_string(dir[k - 1].second) +
          (dir[k].second == dir[k - 1].second ? " twice" : " and by rank " + std::to_string(dir[k].second)));
    }
  }
  return dir;
}

Rank owner_in(const std::vector<std::pair<GlobalIndex, Rank>>& dir, GlobalIndex g) {
  const auto it = std::lower_bound(dir.begin(), dir.end(), std::make_pair(g, Rank{0}));
  return it != dir.end() && it->first == g ? it->second : kAnySource;
}

void sort_unique(std::vector<std::pair<std::uint64_t, std::uint64_t>>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// A member's part: its ghosts as (owner, global) pairs, then what it sends as
// (destination, global) pairs, each list sorted and counted.
void split_maps(std::span<const std::byte> gathered, std::span<const Rank> members,
                std::span<std::vector<std::byte>> parts, Rank n) {
  const std::vector<MemberLists> lists = parse_lists(gathered, n);
  const auto dir = directory_of(lists);
  constexpr auto kNotHere = ~std::uint32_t{0};
  std::vector<std::uint32_t> here(n, kNotHere);
  for (std::size_t k = 0; k < members.size(); ++k) here[members[k]] = static_cast<std::uint32_t>(k);
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> ghosts(members.size()), sends(members.size());
  for (Rank q = 0; q < n; ++q) {
    for (std::uint64_t i = 0; i < lists[q].needed_count; ++i) {
      const GlobalIndex g = word_at(lists[q].needed, i);
      const Rank owner = owner_in(dir, g);
      if (owner == kAnySource) {
        throw InvalidArgument("switchyard: HaloExchange::create: rank " + std::to_string(q) + " needs global index " +
                              std::to_string(g) + ", which no member owns");
      }
      if (owner == q) continue;
      if (here[q] != kNotHere) ghosts[here[q]].emplace_back(owner, g);
      if (here[owner] != kNotHere) sends[here[owner]].emplace_back(q, g);
    }
  }
  std::vector<std::uint64_t> words;
  for (std::size_t k = 0; k < members.size(); ++k) {
    sort_unique(ghosts[k]);
    sort_unique(sends[k]);
    words.clear();
    for (const auto* list : {&ghosts[k], &sends[k]}) {
      words.push_back(list->size());
      for (const auto& [rank, g] : *list) words.insert(words.end(), {rank, g});
    }
    parts[k].resize(words.size() * sizeof(std::uint64_t));
    std::memcpy(parts[k].data(), words.data(), parts[k].size());
  }
}

Task<HaloMap> create_on(Communicator comm, std::span<const GlobalIndex> owned, std::span<const GlobalIndex> needed) {
  const Communicator lib = comm.library(kHaloLibrary);
  std::vector<std::uint64_t> mine{owned.size(), needed.size()};
  mine.insert(mine.end(), owned.begin(), owned.end());
  mine.insert(mine.end(), needed.begin(), needed.end());
  const Rank n = lib.size();
  Communicator::GatherSplit split = [n](std::span<const std::byte> gathered, std::span<const Rank> members,
                                        std::span<std::vector<std::byte>> parts) {
    split_maps(gathered, members, parts, n);
  };
  const std::vector<std::byte> part = co_await lib.allgather_split(std::as_bytes(std::span(mine)), std::move(split));

  HaloMap m;
  m.owned.assign(owned.begin(), owned.end());
  const std::byte* p = part.data();
  const std::uint64_t ghost_count = word_at(p, 0);
  for (std::uint64_t k = 0; k < ghost_count; ++k) {
    m.add_ghost(static_cast<Rank>(word_at(p, 1 + 2 * k)), word_at(p, 2 + 2 * k));
  }
  m.index_globals();
  p += (1 + 2 * ghost_count) * sizeof(std::uint64_t);
  const std::uint64_t send_count = word_at(p, 0);
  for (std::uint64_t k = 0; k < send_count; ++k) {
    // Owned here (the directory said so): a local index below owned.size().
    m.add_sent(static_cast<Rank>(word_at(p, 1 + 2 * k)), m.local_index(word_at(p, 2 + 2 * k)));
  }
  co_return m;
}

}  // namespace

Task<HaloMap> halo_map_create(const Communicator& comm, std::span<const GlobalIndex> owned,
                              std::span<const GlobalIndex> needed) {
  return create_on(comm, owned, needed);
}

}  // namespace switchyard::halo
