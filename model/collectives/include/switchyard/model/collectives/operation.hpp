#pragma once
// The operations and algorithm names are switchyard::model's (algorithms.hpp):
// one-to-all (the root's distinct L-byte message to every process: a scatter),
// all-to-one (the reverse: a gather) and all-to-all (a total exchange).

#include <optional>
#include <string_view>

#include "switchyard/model/algorithms.hpp"

namespace switchyard::model::collectives {

using model::algorithm_names;
using model::Operation;
using model::operation_name;

/// One of algorithm_names(op), or for one-to-all and all-to-one any
/// "logp-lev-rec(G)" with 0 < G < 1.
bool is_algorithm(Operation op, std::string_view algorithm);
/// The gamma of "logp-lev-rec(G)", or nullopt if `algorithm` is not of that form.
std::optional<double> rec_gamma(std::string_view algorithm);

}  // namespace switchyard::model::collectives
