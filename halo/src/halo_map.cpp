// HaloMap's lookups, and the maps of every part of a matrix's rows.

#include "switchyard/halo/halo_map.hpp"

#include <algorithm>
#include <string>

#include "switchyard/errors.hpp"
#include "switchyard/halo/halo_exchange.hpp"

namespace switchyard::halo {

std::uint64_t HaloMap::local_index(GlobalIndex g) const noexcept {
  const auto it = std::lower_bound(by_global.begin(), by_global.end(), std::make_pair(g, std::uint64_t{0}));
  return it != by_global.end() && it->first == g ? it->second : kNotLocal;
}

Rank HaloMap::ghost_owner(std::uint64_t k) const {
  if (k >= ghosts.size()) {
    throw InvalidArgument("switchyard: HaloMap::ghost_owner: ghost " + std::to_string(k) + " of " +
                          std::to_string(ghosts.size()));
  }
  const auto it = std::upper_bound(source_start.begin(), source_start.end(), k);
  return sources[static_cast<std::size_t>(it - source_start.begin()) - 1];
}

namespace {

// Appends `value` to `items`, in the stretch of `key`: a new stretch when the
// key changes. Keeps starts.size() == keys.size() + 1, starts.back() == items.size().
template <class Item>
void append_in_stretch(std::vector<Rank>& keys, std::vector<std::uint64_t>& starts, std::vector<Item>& items, Rank key,
                       Item value) {
  if (keys.empty() || keys.back() != key) {
    keys.push_back(key);
    starts.push_back(starts.back());
  }
  items.push_back(value);
  ++starts.back();
}

}  // namespace

void HaloMap::add_ghost(Rank owner, GlobalIndex g) { append_in_stretch(sources, source_start, ghosts, owner, g); }

void HaloMap::add_sent(Rank destination, std::uint64_t local) {
  append_in_stretch(destinations, destination_start, sent, destination, local);
}

void HaloMap::index_globals() {
  by_global.clear();
  by_global.reserve(local_size());
  for (std::uint64_t i = 0; i < owned.size(); ++i) by_global.emplace_back(owned[i], i);
  for (std::uint64_t k = 0; k < ghosts.size(); ++k) by_global.emplace_back(ghosts[k], owned.size() + k);
  std::sort(by_global.begin(), by_global.end());
}

namespace {

// Part p's ghosts: the columns of its rows that other parts own, by (owner,
// column). `seen` (one entry per column, reused across parts) marks those
// already taken for p.
void find_ghosts(const SparsityPattern& a, const RowPartition& rows, Rank p, std::vector<Rank>& seen, HaloMap& m) {
  std::vector<std::pair<Rank, GlobalIndex>> ghosts;
  for (const GlobalIndex i : rows.rows_of(p)) {
    for (std::uint64_t k = a.row_start[i]; k < a.row_start[i + 1]; ++k) {
      const GlobalIndex j = a.column[k];
      if (j >= a.columns) {
        throw InvalidArgument("switchyard: HaloExchange: row " + std::to_string(i) + " has column " +
                              std::to_string(j) + ", beyond the matrix's " + std::to_string(a.columns));
      }
      const Rank owner = rows.owner(j);
      if (owner == p || seen[j] == p) continue;
      seen[j] = p;
      ghosts.emplace_back(owner, j);
    }
  }
  std::sort(ghosts.begin(), ghosts.end());
  for (const auto& [owner, j] : ghosts) m.add_ghost(owner, j);
}

}  // namespace

std::vector<HaloMap> halo_maps(const SparsityPattern& a, const RowPartition& rows) {
  if (a.rows != a.columns) {
    throw InvalidArgument(
        "switchyard: HaloExchange: x is partitioned like the rows, so the matrix must be square; "
        "this one is " +
        std::to_string(a.rows) + " x " + std::to_string(a.columns));
  }
  if (rows.rows() != a.rows) {
    throw InvalidArgument("switchyard: HaloExchange: the partition has " + std::to_string(rows.rows()) +
                          " rows, the matrix " + std::to_string(a.rows));
  }
  if (a.row_start.size() != a.rows + 1 || a.row_start.back() != a.column.size()) {
    throw InvalidArgument(
        "switchyard: HaloExchange: row_start must have rows + 1 entries, the last the number of "
        "entries");
  }
  const Rank parts = rows.parts();
  std::vector<HaloMap> maps(parts);
  std::vector<Rank> seen(a.columns, kAnySource);
  // What each owner sends: (destination, local index), filled destination by
  // destination in ascending order, each destination's in its ghost order.
  std::vector<std::vector<std::pair<Rank, std::uint64_t>>> sends(parts);
  for (Rank p = 0; p < parts; ++p) {
    HaloMap& m = maps[p];
    const auto mine = rows.rows_of(p);
    m.owned.assign(mine.begin(), mine.end());
    find_ghosts(a, rows, p, seen, m);
    for (const GlobalIndex j : m.ghosts) sends[rows.owner(j)].emplace_back(p, rows.position(j));
  }
  for (Rank o = 0; o < parts; ++o) {
    HaloMap& m = maps[o];
    for (const auto& [destination, local] : sends[o]) m.add_sent(destination, local);
    std::vector<std::pair<Rank, std::uint64_t>>().swap(sends[o]);
    m.index_globals();
  }
  return maps;
}

schedulers::CommMatrix halo_matrix(std::span<const HaloMap> maps, std::uint64_t element_bytes) {
  schedulers::CommMatrix m(static_cast<Rank>(maps.size()));
  for (Rank o = 0; o < maps.size(); ++o) {
    const HaloMap& h = maps[o];
    for (std::size_t d = 0; d < h.destinations.size(); ++d) {
      m.set(o, h.destinations[d], (h.destination_start[d + 1] - h.destination_start[d]) * element_bytes);
    }
  }
  return m;
}

}  // namespace switchyard::halo
