#include "switchyard/collectives/operation.hpp"

#include <charconv>

namespace switchyard::collectives {

std::string_view name(Operation op) {
  switch (op) {
    case Operation::kOneToAll: return "one-to-all";
    case Operation::kAllToOne: return "all-to-one";
    case Operation::kAllToAll: return "all-to-all";
  }
  return "?";
}

std::optional<Operation> parse_operation(std::string_view text) {
  for (Operation op : {Operation::kOneToAll, Operation::kAllToOne, Operation::kAllToAll}) {
    if (text == name(op)) return op;
  }
  return std::nullopt;
}

const std::vector<std::string>& algorithm_names(Operation op) {
  // The paper's all-to-one family is its one-to-all family reversed; a
  // broadcast reversed is a reduction, not a gather, so 1-lev-our-br has no
  // all-to-one counterpart (the paper evaluates none either).
  static const std::vector<std::string> one_to_all{"1-lev-dir", "1-lev-our-br", "2-lev-rec",
                                                   "3-lev-sq",  "logp-lev-sq",  "logp-lev-rec(0.75)"};
  static const std::vector<std::string> all_to_one{"1-lev-dir", "2-lev-rec", "3-lev-sq", "logp-lev-sq",
                                                   "logp-lev-rec(0.75)"};
  static const std::vector<std::string> all_to_all{"1-lev-dir", "1-lev-perm-linear", "1-lev-perm-xor", "2-lev-sq",
                                                   "2-lev-r,c", "logp-lev-bfly"};
  switch (op) {
    case Operation::kOneToAll: return one_to_all;
    case Operation::kAllToOne: return all_to_one;
    case Operation::kAllToAll: return all_to_all;
  }
  return all_to_all;
}

std::optional<double> rec_gamma(std::string_view algorithm) {
  constexpr std::string_view prefix = "logp-lev-rec(";
  if (!algorithm.starts_with(prefix) || !algorithm.ends_with(")")) return std::nullopt;
  const std::string_view number = algorithm.substr(prefix.size(), algorithm.size() - prefix.size() - 1);
  double gamma = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), gamma);
  if (ec != std::errc() || end != number.data() + number.size() || !(gamma > 0 && gamma < 1)) return std::nullopt;
  return gamma;
}

bool is_algorithm(Operation op, std::string_view algorithm) {
  for (const std::string& a : algorithm_names(op)) {
    if (a == algorithm) return true;
  }
  return op != Operation::kAllToAll && rec_gamma(algorithm).has_value();
}

}  // namespace switchyard::collectives
