#include "switchyard/model/collectives/operation.hpp"

#include <charconv>

namespace switchyard::model::collectives {

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
  return op != Operation::all_to_all && rec_gamma(algorithm).has_value();
}

}  // namespace switchyard::model::collectives
