#include "switchyard/model/estimators.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "switchyard/median.hpp"

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
  return switchyard::median(std::move(samples));
}

}  // namespace switchyard::model
