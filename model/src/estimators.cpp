#include "switchyard/model/estimators.hpp"

#include <algorithm>
#include <stdexcept>

namespace switchyard::model {
namespace {

void require_samples(const std::vector<double>& samples, const char* what) {
  if (samples.empty()) throw std::invalid_argument(std::string("switchyard::model::") + what + ": no samples");
}

}  // namespace

double low_quantile(std::vector<double> samples) {
  require_samples(samples, "low_quantile");
  const auto at = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 10);
  std::nth_element(samples.begin(), at, samples.end());
  return *at;
}

double median(std::vector<double> samples) {
  require_samples(samples, "median");
  const std::size_t n = samples.size();
  const auto upper = samples.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(samples.begin(), upper, samples.end());
  if (n % 2) return *upper;
  return (*std::max_element(samples.begin(), upper) + *upper) / 2;
}

}  // namespace switchyard::model
