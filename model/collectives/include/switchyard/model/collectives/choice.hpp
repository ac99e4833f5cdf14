#pragma once
// Choosing an algorithm: `auto` by the C3 model's units for a machine file,
// and, for comparison, a fixed size-keyed table like Open MPI's coll_tuned
// decision functions.

#include <cstdint>
#include <string>

#include "switchyard/model/collectives/operation.hpp"
#include "switchyard/types.hpp"

namespace switchyard::model {
struct Machine;
}

namespace switchyard::model::collectives {

/// The units `machine` predicts for the algorithm's supersteps at (p, L, root).
double predicted_units(Operation op, const std::string& algorithm, Rank processes, std::uint64_t bytes,
                       const model::Machine& machine, Rank root = 0);

/// The algorithm `auto` runs: the fewest predicted units among algorithm_names(op)
/// (ties: the first listed). InvalidArgument without a machine.
std::string choose_algorithm(Operation op, Rank processes, std::uint64_t bytes, const model::Machine* machine,
                             Rank root = 0);

/// Open MPI's fixed decision rules (coll_tuned *_intra_dec_fixed, the 1.x-4.x
/// thresholds) mapped onto this family: alltoall -> Bruck (logp-lev-bfly) for
/// L < 200 B on more than 12 processes, basic linear (1-lev-dir) below 3000 B,
/// pairwise (1-lev-perm-linear) above; scatter -> binomial (logp-lev-sq) for
/// L < 300 B on more than 10 processes, else linear (1-lev-dir); gather ->
/// linear above 6000 B, binomial on more than 60 processes or on more than 10
/// below 1024 B, else linear.
std::string fixed_table_algorithm(Operation op, Rank processes, std::uint64_t bytes);

}  // namespace switchyard::model::collectives
