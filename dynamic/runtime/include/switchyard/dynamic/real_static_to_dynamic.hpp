#pragma once
// The static-to-dynamic wrapper of section 3.5, in real mode (the slot-time
// one is static_to_dynamic.hpp): a static task
// that runs in time X M + V and whose nodes learn M, repeated back to back.
// Each period begins with the prefix (every router contributes how many
// requests it holds, and every router learns every count, so M and each
// sender's share are known to all), then every router calls the static task
// on the requests it held; requests that arrive meanwhile wait for the next
// period. An empty period does not loop: the routers wait in the kernel for a
// request anywhere (its router wakes the others), so an idle pipeline costs no CPU.
//
// Instances: indirect broadcasting (successive PMNBs, primitives::pmnb) and
// dynamic scattering (primitives::pmns).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "switchyard/communicator.hpp"
#include "switchyard/task.hpp"

namespace switchyard::dynamic {

/// A static task of the real-mode static-to-dynamic wrapper: runs one period's requests among the routers.
class RealStaticAlgorithm {
 public:
  virtual ~RealStaticAlgorithm() = default;
  /// Bytes of one request as a producer hands it to its router, for packets
  /// of `packet_bytes` (header and payload) among `nodes` routers.
  virtual std::size_t request_bytes(std::size_t packet_bytes, Rank nodes) const = 0;
  /// One period: every router calls it with every router's count (the
  /// prefix's result) and its own counts[me] requests, back to back in `mine`.
  /// `receive` is called with every packet that reaches this router.
  virtual Task<void> run(Communicator routers, std::span<const std::uint64_t> counts, std::span<const std::byte> mine,
                         std::size_t packet_bytes, const std::function<void(std::span<const std::byte>)>& receive) = 0;
};

/// Indirect broadcasting's static task: the period's M packets (a request is
/// one packet, to every other node) in one primitives::pmnb among the routers
/// that hold some, each sender's block its packets padded to the largest count.
std::unique_ptr<RealStaticAlgorithm> real_pmnb_broadcast();
/// Dynamic scattering's static task: a request is one packet per node (its own
/// slot unused); the period's requests in one primitives::pmns, each block the
/// sender's packets for that destination padded to the largest count.
std::unique_ptr<RealStaticAlgorithm> real_pmns_scatter();

}  // namespace switchyard::dynamic
