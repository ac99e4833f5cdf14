#include "switchyard/model/collectives/choice.hpp"

namespace switchyard::model::collectives {

std::string fixed_table_algorithm(Operation op, Rank p, std::uint64_t L) {
  switch (op) {
    case Operation::all_to_all:
      if (L < 200 && p > 12) return "logp-lev-bfly";
      return L < 3000 ? "1-lev-dir" : "1-lev-perm-linear";
    case Operation::one_to_all:
      return L < 300 && p > 10 ? "logp-lev-sq" : "1-lev-dir";
    case Operation::all_to_one:
      if (L > 6000) return "1-lev-dir";
      return p > 60 || (p > 10 && L < 1024) ? "logp-lev-sq" : "1-lev-dir";
  }
  return "1-lev-dir";
}

}  // namespace switchyard::model::collectives
