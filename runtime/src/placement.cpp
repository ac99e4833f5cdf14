#include "switchyard/placement.hpp"

#include <algorithm>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard {

std::vector<std::uint32_t> Placement::assign(std::uint64_t processes, const std::vector<int>& cores) const {
  const std::uint64_t c = cores.size();
  std::vector<std::uint32_t> out(processes);
  switch (kind_) {
    case Kind::kRoundRobin:
      for (std::uint64_t r = 0; r < processes; ++r) out[r] = static_cast<std::uint32_t>(r % c);
      break;
    case Kind::kBlock: {
      const std::uint64_t per = (processes + c - 1) / c;
      for (std::uint64_t r = 0; r < processes; ++r) out[r] = static_cast<std::uint32_t>(r / per);
      break;
    }
    case Kind::kExplicit:
      if (map_.size() != processes) {
        throw InvalidArgument("switchyard: explicit placement maps " + std::to_string(map_.size()) +
                              " ranks, but the job has " + std::to_string(processes) + " processes");
      }
      for (std::uint64_t r = 0; r < processes; ++r) {
        const auto it = std::find(cores.begin(), cores.end(), map_[r]);
        if (it == cores.end()) {
          throw InvalidArgument("switchyard: explicit placement puts rank " + std::to_string(r) + " on core " +
                                std::to_string(map_[r]) + ", which has no worker in this runtime");
        }
        out[r] = static_cast<std::uint32_t>(it - cores.begin());
      }
      break;
  }
  return out;
}

Placement Placement::slice(std::uint64_t first, std::uint64_t count, std::uint64_t total) const {
  if (kind_ != Kind::kExplicit) return *this;
  if (map_.size() != total) {
    throw InvalidArgument("switchyard: explicit placement maps " + std::to_string(map_.size()) +
                          " ranks, but the job has " + std::to_string(total) + " processes");
  }
  return Placement(kind_, std::vector<int>(map_.begin() + static_cast<std::ptrdiff_t>(first),
                                           map_.begin() + static_cast<std::ptrdiff_t>(first + count)));
}

std::string Placement::name() const {
  switch (kind_) {
    case Kind::kRoundRobin:
      return "round-robin";
    case Kind::kBlock:
      return "block";
    case Kind::kExplicit:
      return "explicit";
  }
  return "?";
}

}  // namespace switchyard
