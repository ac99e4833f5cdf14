#pragma once
// One process's index maps in a halo exchange: the global indices it owns, in
// its local order; its ghosts (the indices it needs and another process owns),
// grouped by owner; and which of its own entries each neighbour needs. Built
// by HaloExchange (halo_exchange.hpp), from a matrix and a partition of its
// rows, or from what each process owns and needs.
//
// Local numbering: owned entry i is local index i; ghost k is local index
// owned.size() + k. The ghosts of one owner are consecutive and ascending by
// global index, the owners ascending: what a process receives from one owner
// lands in one stretch of its ghosts.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "switchyard/halo/row_partition.hpp"
#include "switchyard/types.hpp"

namespace switchyard::halo {

/// One process's index maps in a halo exchange (see the file's description).
struct HaloMap {
  /// What local_index() gives for an index neither owned nor needed.
  static constexpr std::uint64_t kNotLocal = ~std::uint64_t{0};

  std::vector<GlobalIndex> owned;  ///< local index -> global index
  std::vector<GlobalIndex> ghosts;  ///< ghost k -> global index
  /// The owners of the ghosts, ascending; source_start[s] .. source_start[s + 1]
  /// are the ghosts sources[s] owns (sources.size() + 1 entries).
  std::vector<Rank> sources;
  std::vector<std::uint64_t> source_start{0};  ///< sources.size() + 1 entries: where each source's ghosts begin
  /// The processes that need entries of this one, ascending; their entries
  /// (local indices) are sent[destination_start[d] .. destination_start[d + 1]),
  /// in the order of that process's ghosts.
  std::vector<Rank> destinations;
  /// destinations.size() + 1 entries: where each destination's entries begin in sent.
  std::vector<std::uint64_t> destination_start{0};
  std::vector<std::uint64_t> sent;  ///< the local indices sent, destination after destination
  /// (global index, local index), sorted: local_index's lookup.
  std::vector<std::pair<GlobalIndex, std::uint64_t>> by_global;

  /// The local index of global index g, or kNotLocal if this process neither
  /// owns nor needs it.
  std::uint64_t local_index(GlobalIndex g) const noexcept;
  /// The owner of ghost k.
  Rank ghost_owner(std::uint64_t k) const;
  std::uint64_t local_size() const noexcept { return owned.size() + ghosts.size(); }  ///< owned, then ghosts
  /// Building: ghosts appended by (owner, global index), sent entries by
  /// destination, each in that destination's ghost order.
  void add_ghost(Rank owner, GlobalIndex g);
  /// Appends local entry `local` to what `destination` is sent.
  void add_sent(Rank destination, std::uint64_t local);
  /// Sets by_global from owned and ghosts.
  void index_globals();
};

}  // namespace switchyard::halo
