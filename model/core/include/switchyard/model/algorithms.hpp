#pragma once
// The k-level algorithms of the paper's section 4 as superstep descriptions,
// for any p: pure functions of (p, L, root) with no runtime behind them. The
// runtime implementations (switchyard collective) run exactly these
// descriptions; the model charges them (cost.hpp).
//
// Processes are relabelled relative to the root, v = (i - root) mod p, so the
// root is virtual process 0; pieces and members name real processes.
//
// How p that is not a square or a power of two is split:
// - groups of c = ceil(sqrt(p)) consecutive virtual processes, the last one
//   smaller (2-lev-rec, 3-lev-sq; 3-lev-sq splits each group again the same way);
// - halving: a range of n processes splits into the first ceil(n/2) (holding
//   the sender) and the rest (logp-lev-sq, 1-lev-our-br); logp-lev-rec(gamma)
//   keeps ceil(gamma n), at least 1 and at most n - 1; ranges split in the
//   same superstep, so there are ceil(log2 p) supersteps (more for gamma != 1/2);
// - all-to-all 2-lev-sq and 2-lev-r,c use p = r x c with r the largest divisor
//   of p not above sqrt(p) (a prime p gives r = 1: the algorithms degenerate
//   and the model charges them so);
// - 1-lev-perm-xor for p not a power of two runs the P - 1 XOR permutations of
//   the next power of two P, dropping the partners >= p;
// - logp-lev-bfly is the butterfly (partner i xor 2^k) when p is a power of
//   two, and Bruck's rotation (partner i + 2^k mod p) otherwise; both take
//   ceil(log2 p) supersteps.
//
// Shapes: each submachine carries its logical shape for mesh machines (the
// paper's Delta): the whole machine is the near-square grid ceil(p / c) x c,
// c = ceil(sqrt(p)); rows, columns and blocks are sub-grids of it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/model/superstep.hpp"

namespace switchyard::model {

/// The three collective operations of the C³ paper.
enum class Operation : std::uint8_t { one_to_all, all_to_one, all_to_all };

/// "one-to-all", "all-to-one", "all-to-all".
std::string_view operation_name(Operation op) noexcept;
/// Throws std::invalid_argument naming the value for anything else.
Operation parse_operation(std::string_view name);

/// The algorithms of an operation, in the paper's order:
///   one-to-all: 1-lev-dir, 1-lev-our-br, 2-lev-rec, 3-lev-sq, logp-lev-sq,
///               logp-lev-rec(0.75)
///   all-to-one: the same reversed, without 1-lev-our-br (a reversed broadcast
///               is a reduction, not a gather; the paper's family has none)
///   all-to-all: 1-lev-dir, 1-lev-perm-linear, 1-lev-perm-xor, 2-lev-sq,
///               2-lev-r,c, logp-lev-bfly
/// logp-lev-rec accepts any gamma in (0, 1): "logp-lev-rec(0.6)".
const std::vector<std::string>& algorithm_names(Operation op);

/// The supersteps of `algorithm` for p processes, messages of L bytes, the
/// root of one-to-all / all-to-one. Throws std::invalid_argument for an
/// unknown name, p = 0 or root >= p.
Algorithm supersteps(Operation op, std::string_view algorithm, ProcessId p, std::uint64_t message_bytes,
                     ProcessId root = 0);

// One function per algorithm (what supersteps() dispatches to).
namespace one_to_all {
Algorithm direct(ProcessId p, std::uint64_t L, ProcessId root);  ///< 1-lev-dir
Algorithm binomial_broadcast(ProcessId p, std::uint64_t L, ProcessId root);  ///< 1-lev-our-br
Algorithm two_level_rows(ProcessId p, std::uint64_t L, ProcessId root);  ///< 2-lev-rec
Algorithm three_level_square(ProcessId p, std::uint64_t L, ProcessId root);  ///< 3-lev-sq
Algorithm binomial_heap(ProcessId p, std::uint64_t L, ProcessId root);  ///< logp-lev-sq
Algorithm uneven_heap(ProcessId p, std::uint64_t L, ProcessId root, double gamma);  ///< logp-lev-rec(gamma)
}  // namespace one_to_all

namespace all_to_all {
Algorithm direct(ProcessId p, std::uint64_t L);  ///< 1-lev-dir
Algorithm linear_permutations(ProcessId p, std::uint64_t L);  ///< 1-lev-perm-linear
Algorithm xor_permutations(ProcessId p, std::uint64_t L);  ///< 1-lev-perm-xor
Algorithm two_level_square(ProcessId p, std::uint64_t L);  ///< 2-lev-sq (3 supersteps)
Algorithm rows_then_columns(ProcessId p, std::uint64_t L);  ///< 2-lev-r,c (2 supersteps)
Algorithm butterfly(ProcessId p, std::uint64_t L);  ///< logp-lev-bfly
}  // namespace all_to_all

/// All-to-one as the reverse of a one-to-all description: supersteps in
/// reverse order, every transfer and piece turned around.
Algorithm reversed(const Algorithm& one_to_all);

}  // namespace switchyard::model
