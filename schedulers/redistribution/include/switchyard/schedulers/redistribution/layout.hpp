#pragma once
/// @file
/// A Layout binds a Distribution to an array's extents: who owns which element,
/// and where it lives in its owner's local block.
///
/// Processes. A grid P_1 x ... x P_δ numbers its processes row-major, the last
/// axis fastest: coordinates (i_1, i_2) on a P_1 x P_2 grid are process
/// i_1 P_2 + i_2 (the paper's COM[4 i_1 + i_2, ...] for a 2 x 4 grid, §4.3).
///
/// Ownership. Along dimension d, cyclic(b) on P processes gives global index g
/// to grid coordinate (g div b) mod P; BLOCK is cyclic(ceil(N / P)). Process p's
/// elements along d are an LDD (o, b, s, n) = (i_d b, b, P b, blocks) with its
/// last block cut at the extent, so its set is an LddSet of one or two LDDs.
///
/// Local layout. A process stores its elements in one array, row-major over its
/// local index space: along each dimension the local index of g is the position
/// of g in the process's (ascending) index set, ((g - o) div s) b + (g - o) mod s,
/// and the local extents are the sizes of those sets. A process that owns
/// nothing has an empty local array.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "switchyard/schedulers/redistribution/distribution.hpp"
#include "switchyard/schedulers/redistribution/ldd.hpp"
#include "switchyard/types.hpp"

namespace switchyard::schedulers::redistribution {

/// A Distribution bound to an array's extents (see the file's description).
class Layout {
 public:
  /// Throws InvalidArgument if the distribution's rank differs from the
  /// extents', an extent or block size or grid axis is not positive, or the
  /// array has more than kMaxElements elements.
  Layout(std::vector<Index> extent, Distribution distribution);

  std::size_t rank() const noexcept { return extent_.size(); }  ///< δ, the array's dimensions
  const std::vector<Index>& extent() const noexcept { return extent_; }  ///< elements along each dimension
  const Distribution& distribution() const noexcept { return distribution_; }  ///< as given
  Index elements() const noexcept { return elements_; }  ///< the array's elements in all
  Rank processes() const noexcept { return processes_; }  ///< of the grid: the product of its axes
  Index grid(std::size_t d) const { return distribution_.grid.at(d); }  ///< processes along dimension d
  /// The effective block size b along d: ceil(N / P) for BLOCK.
  Index block(std::size_t d) const { return block_.at(d); }
  /// "cyclic(6)@4 over 120000", "block,block@2x4 over 1000x1000".
  std::string str() const;

  /// Process p's grid coordinates, one per dimension. Throws InvalidArgument if p is not a process of the grid.
  std::vector<Index> coordinates(Rank p) const;
  /// The process at these grid coordinates. Throws InvalidArgument for a wrong count or a coordinate off the grid.
  Rank process_at(std::span<const Index> coordinates) const;

  /// Along dimension d: the grid coordinate owning global index g, and g's local index there.
  Index owner(std::size_t d, Index g) const;
  Index local_index(std::size_t d, Index g) const;  ///< see owner(std::size_t, Index)
  /// Along dimension d: the LDD of grid coordinate i, and its number of elements.
  LddSet ldd(std::size_t d, Index i) const;
  Index local_extent(std::size_t d, Index i) const;  ///< see ldd(std::size_t, Index)

  /// Process p: its δ-dimensional LDD, its local extents, and its element count.
  MultiLdd ldd(Rank p) const;
  std::vector<Index> local_extents(Rank p) const;  ///< see ldd(Rank)
  Index local_size(Rank p) const;  ///< see ldd(Rank)

  /// The process owning a global multi-index, and the element's offset in its local array.
  Rank owner(std::span<const Index> global) const;
  /// See owner(std::span<const Index>). Throws InvalidArgument if p does not own the element.
  Index local_offset(Rank p, std::span<const Index> global) const;

  /// Row-major global array -> one local array per process, and back.
  /// Throws InvalidArgument if the sizes do not match the layout.
  std::vector<std::vector<double>> scatter(std::span<const double> global) const;
  std::vector<double> gather(std::span<const std::span<const double>> local) const;  ///< see scatter

 private:
  std::vector<Index> extent_;
  Distribution distribution_;
  std::vector<Index> block_;
  Index elements_ = 0;
  Rank processes_ = 0;
};

}  // namespace switchyard::schedulers::redistribution
