#include <limits>

#include "switchyard/errors.hpp"
#include "switchyard/model/collectives/choice.hpp"
#include "switchyard/model/cost.hpp"

namespace switchyard::model::collectives {

double predicted_units(Operation op, const std::string& algorithm, Rank processes, std::uint64_t bytes,
                       const model::Machine& machine, Rank root) {
  return model::cost(machine, model::supersteps(op, algorithm, processes, bytes, root)).total();
}

std::string choose_algorithm(Operation op, Rank processes, std::uint64_t bytes, const model::Machine* machine,
                             Rank root) {
  if (machine == nullptr) {
    throw InvalidArgument("switchyard: collective " + std::string(operation_name(op)) +
                          ": algorithm 'auto' needs a machine (a machine file: switchyard model calibrate)");
  }
  std::string best;
  double fewest = std::numeric_limits<double>::infinity();
  for (const std::string& a : algorithm_names(op)) {
    const double units = predicted_units(op, a, processes, bytes, *machine, root);
    if (units < fewest) {
      fewest = units;
      best = a;
    }
  }
  return best;
}

}  // namespace switchyard::model::collectives
