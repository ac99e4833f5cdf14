#include "switchyard/model/superstep.hpp"

#include <stdexcept>
#include <string>
#include <unordered_set>

namespace switchyard::model {
namespace {

[[noreturn]] void bad(std::size_t step, std::size_t sub, const std::string& what) {
  throw std::invalid_argument("switchyard::model: superstep " + std::to_string(step) + ", submachine " +
                              std::to_string(sub) + ": " + what);
}

}  // namespace

void validate(const Algorithm& algorithm, std::uint64_t processes, std::uint64_t piece_bytes) {
  for (std::size_t k = 0; k < algorithm.size(); ++k) {
    std::unordered_set<ProcessId> taken;
    for (std::size_t g = 0; g < algorithm[k].submachines.size(); ++g) {
      const Submachine& sub = algorithm[k].submachines[g];
      std::unordered_set<ProcessId> members;
      for (ProcessId m : sub.members) {
        if (m >= processes) bad(k, g, "member " + std::to_string(m) + " >= p = " + std::to_string(processes));
        if (!taken.insert(m).second) bad(k, g, "process " + std::to_string(m) + " in two submachines");
        members.insert(m);
      }
      for (const Transfer& t : sub.transfers) {
        if (!members.contains(t.src) || !members.contains(t.dst))
          bad(k, g, "transfer " + std::to_string(t.src) + " -> " + std::to_string(t.dst) + " leaves the submachine");
        if (t.piece_count == 0) continue;
        if (t.first_piece + t.piece_count > sub.pieces.size()) bad(k, g, "transfer names pieces it does not have");
        if (t.bytes != t.piece_count * piece_bytes)
          bad(k, g,
              "transfer of " + std::to_string(t.piece_count) + " pieces has " + std::to_string(t.bytes) + " bytes");
      }
    }
  }
}

}  // namespace switchyard::model
