#include "switchyard/collectives/collective_plan.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::collectives {

std::string choose_algorithm(Operation op, Rank, std::uint64_t, const model::Machine* machine) {
  if (machine == nullptr) {
    throw InvalidArgument("switchyard: collective " + std::string(name(op)) +
                          ": algorithm 'auto' needs a machine file (switchyard model calibrate)");
  }
  throw InvalidArgument("switchyard: auto: the model library is not linked yet");
}

}  // namespace switchyard::collectives
