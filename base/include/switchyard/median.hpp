#pragma once
/// @file
/// The median of timing samples, the one figure switchyard quotes for a noisy
/// time (the machine is shared: the mean follows the other tenants). Written
/// out here only: the exchange summaries, the calibration's estimators, the
/// command line and the benchmarks all take it from here.

#include <algorithm>
#include <vector>

#include "switchyard/errors.hpp"

namespace switchyard {

/// The middle sample, or the mean of the middle two of an even count; throws
/// InvalidArgument for no samples. O(n): a selection, not a sort.
inline double median(std::vector<double> samples) {
  if (samples.empty()) throw InvalidArgument("switchyard::median: no samples");
  const std::size_t n = samples.size();
  const auto upper = samples.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(samples.begin(), upper, samples.end());
  if (n % 2) return *upper;
  return (*std::max_element(samples.begin(), upper) + *upper) / 2;
}

}  // namespace switchyard
