#pragma once
// Which process owns each row of a sparse matrix, and with it the entry of
// the vectors x and y of the same index (x is partitioned like the rows, as
// in y = A x with A square): contiguous blocks, or an owner given per row.

#include <cstdint>
#include <span>
#include <vector>

#include "switchyard/types.hpp"

namespace switchyard::halo {

/// A row's (and its vector entries') index in the whole matrix.
using GlobalIndex = std::uint64_t;

/// Which part (process) owns each row (see the file's description).
class RowPartition {
 public:
  RowPartition() = default;  ///< no rows, no parts
  /// `parts` contiguous blocks, in order: the first rows % parts of them one
  /// row longer than the others. More parts than rows: the last ones are empty.
  static RowPartition blocks(GlobalIndex rows, Rank parts);
  /// Row i to part owner_of_row[i], each below `parts`. A part may own no row.
  static RowPartition owners(std::vector<Rank> owner_of_row, Rank parts);

  GlobalIndex rows() const noexcept { return owner_.size(); }  ///< the matrix's rows
  Rank parts() const noexcept { return static_cast<Rank>(start_.size() - 1); }  ///< the number of parts
  Rank owner(GlobalIndex row) const { return owner_.at(row); }  ///< the part that owns `row`
  /// Part p's rows, ascending: its local order.
  std::span<const GlobalIndex> rows_of(Rank p) const {
    return std::span(order_).subspan(start_.at(p), start_.at(p + 1) - start_.at(p));
  }
  /// Where `row` is in rows_of(owner(row)).
  GlobalIndex position(GlobalIndex row) const { return position_.at(row); }

 private:
  std::vector<Rank> owner_;  ///< by row
  std::vector<GlobalIndex> position_;  ///< by row
  std::vector<GlobalIndex> order_;  ///< the rows, part by part, ascending within each
  std::vector<GlobalIndex> start_{0};  ///< parts + 1: where each part begins in order_
};

}  // namespace switchyard::halo
