#pragma once
// What one run of a dynamic scheme measured, in slot mode or real mode, beside
// what the paper's theorems say of it: the row `switchyard dynamic` prints and
// writes as JSON.

#include <cstddef>
#include <cstdint>
#include <string>

namespace switchyard::dynamic {

/// The three dynamic schemes of Varvarigos sections 3.4 and 3.5.
enum class DynamicScheme { indirect_broadcast, direct_broadcast, scatter };

/// One run of a dynamic scheme beside its theorem: the row the CLI prints and writes as JSON.
struct DynamicReport {
  DynamicScheme scheme = DynamicScheme::indirect_broadcast;  ///< the scheme that ran
  std::string topology;  ///< the virtual network's name, e.g. "hypercube(4)"
  std::size_t processes = 0;  ///< N
  std::size_t k = 0;  ///< edge-disjoint spanning trees (or links per node) used
  std::string time_unit;  ///< "slot" or "us": the unit of every rate and delay below
  double rate = 0;  ///< λ, requests per process per time unit
  double stability_limit = 0;  ///< the theorem's largest stable λ
  bool stable = false;  ///< the measured verdict, from queue growth over the run
  double broadcast_delay = 0;  ///< 𝓑 (for scattering: the delay to complete a scatter)
  double broadcast_delay_bound = 0;  ///< the theorem's bound or closed form for it, 0 if none
  double reception_delay = 0;  ///< 𝓡
  double reception_delay_bound = 0;  ///< the theorem's bound or closed form for it, 0 if none
  std::uint64_t generated = 0;  ///< requests generated before the stop
  std::uint64_t delivered = 0;  ///< packets delivered: generated × (N − 1) once drained
};

}  // namespace switchyard::dynamic
