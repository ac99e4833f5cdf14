#include "switchyard/model/slow_rounds.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace switchyard::model {

std::vector<bool> detect_slow_rounds(std::span<const std::vector<double>> figures, double factor) {
  const std::string where = "switchyard::model::detect_slow_rounds: ";
  if (figures.empty() || figures.front().empty()) throw std::invalid_argument(where + "no figures or no rounds");
  if (!(factor >= 1) || !std::isfinite(factor))
    throw std::invalid_argument(where + "factor must be a finite number >= 1");
  const std::size_t rounds = figures.front().size();
  std::vector<bool> slow(rounds, false);
  for (std::size_t f = 0; f < figures.size(); ++f) {
    const std::vector<double>& times = figures[f];
    if (times.size() != rounds)
      throw std::invalid_argument(where + "figure " + std::to_string(f) + " has " + std::to_string(times.size()) +
                                  " rounds, figure 0 " + std::to_string(rounds));
    for (std::size_t k = 0; k < rounds; ++k)
      if (!(times[k] > 0) || !std::isfinite(times[k]))
        throw std::invalid_argument(where + "figure " + std::to_string(f) + ", round " + std::to_string(k) +
                                    ": times must be finite numbers > 0");
    const double fastest = *std::min_element(times.begin(), times.end());
    for (std::size_t k = 0; k < rounds; ++k) slow[k] = slow[k] || times[k] > factor * fastest;
  }
  return slow;
}

}  // namespace switchyard::model
