#pragma once
// Estimators of a calibration's figures from repeated, noisy runs
// (calibration.hpp). Each throws std::invalid_argument on no samples.

#include <vector>

namespace switchyard::model {

/// The lower decile: other tenants of the machine only ever add time to a run,
/// so the fast runs are the machine's own figure; under a load of several
/// tenants per core most runs are hit, which moved the lower quartile by 11-12 %
/// between calibrations. The decile (not the minimum) leaves out a lucky outlier.
double low_quantile(std::vector<double> samples);

/// The median (the mean of the middle two of an even count): for differences
/// of runs taken in pairs, where load adds to either member of a pair, so that
/// the difference has no floor for a low quantile to find.
double median(std::vector<double> samples);

}  // namespace switchyard::model
