#include "switchyard/model/colocation.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace switchyard::model {

ColocationVerdict detect_colocation(std::span<const double> cross_core_one_way_ns,
                                    std::span<const double> same_core_one_way_ns, double ratio) {
  if (cross_core_one_way_ns.size() != same_core_one_way_ns.size() || cross_core_one_way_ns.empty())
    throw std::invalid_argument(
        "switchyard::model::detect_colocation: " + std::to_string(cross_core_one_way_ns.size()) + " cross-core and " +
        std::to_string(same_core_one_way_ns.size()) + " same-core rounds: need the same number, at least 1");
  if (!(ratio > 0) || !std::isfinite(ratio))
    throw std::invalid_argument("switchyard::model::detect_colocation: ratio must be a finite number > 0");
  ColocationVerdict v;
  for (std::size_t k = 0; k < cross_core_one_way_ns.size(); ++k) {
    const double cross = cross_core_one_way_ns[k], same = same_core_one_way_ns[k];
    if (!(cross > 0) || !(same > 0) || !std::isfinite(cross) || !std::isfinite(same))
      throw std::invalid_argument("switchyard::model::detect_colocation: round " + std::to_string(k) +
                                  ": times must be finite numbers > 0");
    v.colocated.push_back(cross < ratio * same);
    if (!v.colocated.back()) ++v.normal;
  }
  return v;
}

}  // namespace switchyard::model
