#pragma once
/// @file
/// CCOM, the compacted communication matrix of Ranka-Wang-Fox Fig. 5: row i
/// holds the destinations of process i's messages, copied in column order and
/// then randomly shuffled (the paper's Random_Swap), so that the masking passes
/// of CGM, RS_N and RS_NH never visit an empty entry. Stored flat: one n x width
/// array, width = the longest row, with the active length of each row (the
/// paper's prt(i) + 1) beside it.
///
/// Each row is shuffled with its own random stream, derived from (seed, row):
/// a SplitMix64 sequence started at the row-th output of a std::mt19937_64
/// seeded from `seed` (a mt19937_64 per row would cost more than CGM's whole
/// scheduling loop). A row's result does not depend on which thread builds it or
/// in which order: the serial and the oneTBB-parallel builds are identical.

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "switchyard/schedulers/comm_matrix.hpp"

namespace switchyard::schedulers {

/// A std::allocator whose value-initialisation (resize) leaves the elements
/// uninitialised, so that the parallel compaction is not preceded by a serial
/// zero-fill of the whole n x width array: the row tasks write every element.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  /// What std::allocator_traits rebinds to: the same allocator for U.
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;  ///< UninitializedAllocator of U
  };
  /// Value-initialisation: default-initialises, which leaves a std::uint32_t uninitialised.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  /// Any other construction, as std::allocator does it.
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
/// CCOM's flat n x width arrays of destinations and slots, not zero-filled on resize.
using Entries = std::vector<std::uint32_t, UninitializedAllocator<std::uint32_t>>;

/// CCOM (see the file's description): each process's destinations, shuffled, in one flat array.
struct CompactMatrix {
  Rank processes = 0;  ///< n, the rows
  std::uint32_t width = 0;  ///< the longest row's length: the stride between rows of dst and slot
  /// Row i occupies [i * width, i * width + length[i]) of dst and slot; the
  /// rest of its width is zero.
  Entries dst;
  /// The message's index in CommMatrix::row(i), i.e. its rank in column order:
  /// where the scheduler finds its size without a search.
  Entries slot;
  std::vector<std::uint32_t> length;  ///< each row's active length (the paper's prt(i) + 1)

  /// Row i's active destinations, in their shuffled order.
  std::span<const std::uint32_t> row(Rank i) const { return std::span(dst).subspan(std::size_t{i} * width, length[i]); }
  bool operator==(const CompactMatrix&) const = default;  ///< same rows, element by element
};

/// Fig. 5 from the sparse rows of `m`: O(n + messages). `parallel` builds the
/// rows with tbb::parallel_for.
CompactMatrix compact(const CommMatrix& m, std::uint64_t seed, bool parallel);

/// Fig. 5 as the paper states it, scanning every column of a dense n x n COM
/// (row-major, non-zero = message): O(n^2). Given dense_pattern(m), the result
/// equals compact(m, seed, ...).
CompactMatrix compact_dense(std::span<const std::uint8_t> com, Rank n, std::uint64_t seed, bool parallel);

/// The dense 0/1 COM of the paper for `m`, row-major.
std::vector<std::uint8_t> dense_pattern(const CommMatrix& m);

}  // namespace switchyard::schedulers
