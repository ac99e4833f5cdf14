#pragma once
// The three operations of the C3 paper (Hambrusch-Khokhar, section 4) and the
// names of the k-level algorithms that implement each one. All three are
// personalized: every message is distinct.
//   one-to-all: the root sends its own L-byte message to every process (scatter);
//   all-to-one: every process sends its own L-byte message to the root (gather);
//   all-to-all: every process sends its own L-byte message to every process.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::collectives {

enum class Operation { kOneToAll, kAllToOne, kAllToAll };

std::string_view name(Operation op);
// "one-to-all", "all-to-one", "all-to-all"; nullopt for anything else.
std::optional<Operation> parse_operation(std::string_view text);

// The algorithms `all` runs for `op`, in the paper's order. logp-lev-rec takes
// its gamma in the name, e.g. "logp-lev-rec(0.75)"; any 0 < gamma < 1 is accepted
// by is_algorithm, the list holds the paper's 0.75.
const std::vector<std::string>& algorithm_names(Operation op);
bool is_algorithm(Operation op, std::string_view algorithm);
// The gamma of "logp-lev-rec(G)", or nullopt if `algorithm` is not of that form
// (logp-lev-sq is gamma = 0.5 under its own name).
std::optional<double> rec_gamma(std::string_view algorithm);

}  // namespace switchyard::collectives
