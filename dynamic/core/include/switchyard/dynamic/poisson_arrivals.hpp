#pragma once
// The arrival times of one producer's requests: a Poisson process of a given
// rate, independent of every other producer's and the same for a seed on every
// toolchain (std::exponential_distribution's algorithm is up to the library).

#include <cmath>
#include <cstdint>
#include <string>

#include "switchyard/errors.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::dynamic {

/// One producer's request times (see the file's description).
class PoissonArrivals {
 public:
  /// `rate` requests per time unit (a slot, or a second); `stream` names the
  /// producer, so that producers of one seed draw unrelated gaps.
  PoissonArrivals(double rate, std::uint64_t seed, std::uint64_t stream)
      : rng_(splitmix64(seed ^ splitmix64(stream))), rate_(rate) {
    if (!(rate > 0) || !std::isfinite(rate)) {
      throw InvalidArgument("a Poisson rate must be positive and finite, not " + std::to_string(rate));
    }
  }

  /// The time of the next request since the start, each gap exponential with
  /// mean 1/rate: -ln(1 - u)/rate for u uniform in [0, 1), never infinite.
  double next() noexcept {
    now_ += -std::log1p(-unit_interval(rng_())) / rate_;
    return now_;
  }

  double rate() const noexcept { return rate_; }  ///< requests per time unit

 private:
  SplitMix64 rng_;
  double rate_;
  double now_ = 0;
};

}  // namespace switchyard::dynamic
