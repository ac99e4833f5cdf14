#pragma once
/// @file
/// HPF-style distributions of an array over a process grid (Guo-Nakata-
/// Yamashita §3; HPF 2.0 DISTRIBUTE): per array dimension BLOCK, CYCLIC or
/// CYCLIC(b), over a grid with one axis per array dimension, written as in the
/// command line's --from and --to:
///
/// @verbatim
///   cyclic(6)@4             a 1-D array, cyclic(6) over 4 processes
///   block,cyclic(2)@2x4     a 2-D array on a 2 x 4 grid
/// @endverbatim
///
/// Keywords are case-insensitive and blanks between tokens are ignored. BLOCK
/// is CYCLIC(ceil(N / P)) (HPF's definition), so its block size depends on the
/// extent: see Layout, which binds a Distribution to an array's extents.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::schedulers::redistribution {

/// Global and local array indices, extents, block sizes. Signed: the closed-form
/// LDD arithmetic takes differences and floors of them.
using Index = std::int64_t;

/// Far beyond any grid the runtime runs, and a product of grid axes below it
/// cannot overflow any index arithmetic.
inline constexpr Index kMaxProcesses = Index{1} << 20;
/// Array extents (elements in all) are limited so that every global index, and
/// the product of a stride and a count, fits an Index with room to spare.
inline constexpr Index kMaxElements = Index{1} << 48;

/// How one array dimension is spread over its grid axis.
enum class DimKind : std::uint8_t {
  block,  ///< BLOCK: CYCLIC(ceil(N / P)), one block per process
  cyclic  ///< CYCLIC(b): blocks of b dealt round the processes
};

/// The distribution of one array dimension: BLOCK, CYCLIC or CYCLIC(b).
struct DimDistribution {
  DimKind kind = DimKind::cyclic;  ///< BLOCK or CYCLIC
  Index block = 1;  ///< b of CYCLIC(b); BLOCK's is ceil(N / P), known once the extent is
  bool operator==(const DimDistribution&) const = default;  ///< same kind and block
};

/// A distribution of a whole array: one DimDistribution and one grid axis per dimension.
struct Distribution {
  std::vector<DimDistribution> dims;  ///< one per array dimension
  std::vector<Index> grid;  ///< processes along each dimension; as many as dims

  /// Parses "dist[,dist...]@P1[xP2...]", dist one of block, cyclic, cyclic(b).
  /// Throws InvalidArgument quoting the text and saying what is wrong at
  /// which character (counted from 1).
  static Distribution parse(std::string_view text);
  /// Canonical text, which parse() reads back: "block,cyclic(2)@2x4".
  std::string str() const;
  /// Processes of the grid: the product of its axes.
  Index processes() const;
  bool operator==(const Distribution&) const = default;  ///< same dimensions and grid
};

/// An array's extents, "120000" or "1000x1000". Throws InvalidArgument,
/// quoting the text and saying what is wrong at which character (counted from
/// 1), for anything but positive whole numbers separated by 'x', or an array of
/// more than kMaxElements elements.
std::vector<Index> parse_extent(std::string_view text);

}  // namespace switchyard::schedulers::redistribution

namespace switchyard {
/// The namespace this library had before it joined its folder's
/// (switchyard::schedulers): deprecated, kept so that applications written
/// against it still build. Every redistribution header includes this one.
namespace redistribution = schedulers::redistribution;
}  // namespace switchyard
