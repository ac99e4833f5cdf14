#pragma once
/// @file
/// Which core each software process runs on. A process stays on its core for its
/// whole life: that is what lets everything about it be touched by one thread only.

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/types.hpp"

namespace switchyard {

/// How a job's ranks are placed on the runtime's cores (RunOptions::placement).
class Placement {
 public:
  /// The kind of placement, as the factories below make them.
  enum class Kind {
    kRoundRobin,  ///< round_robin()
    kBlock,  ///< block()
    kExplicit  ///< explicit_map()
  };

  /// Rank r goes to the (r mod c)-th core.
  static Placement round_robin() { return Placement(Kind::kRoundRobin, {}); }
  /// Ranks are cut into c contiguous blocks, one per core.
  static Placement block() { return Placement(Kind::kBlock, {}); }
  /// Rank r goes to OS CPU `os_core_of_rank[r]`, which must be one of the runtime's cores.
  static Placement explicit_map(std::vector<int> os_core_of_rank) {
    return Placement(Kind::kExplicit, std::move(os_core_of_rank));
  }

  /// Which of the three it is.
  Kind kind() const noexcept { return kind_; }
  /// An explicit map's OS cores, by rank; empty for the other kinds.
  const std::vector<int>& explicit_map() const noexcept { return map_; }

  /// Worker index (position in `cores`) of every rank. Throws InvalidArgument
  /// naming the offending rank if an explicit map does not fit.
  std::vector<std::uint32_t> assign(std::uint64_t processes, const std::vector<int>& cores) const;

  /// The placement of ranks [first, first + count) of a job of `total` across
  /// nodes, within their node: the same kind, and an explicit map's part for
  /// those ranks (InvalidArgument if the map does not have `total` entries).
  Placement slice(std::uint64_t first, std::uint64_t count, std::uint64_t total) const;

  /// "round-robin", "block" or "explicit", for messages and reports.
  std::string name() const;

 private:
  Placement(Kind kind, std::vector<int> map) : kind_(kind), map_(std::move(map)) {}
  Kind kind_;
  std::vector<int> map_;
};

}  // namespace switchyard
