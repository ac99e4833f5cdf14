// An application written against the names switchyard had before folder,
// target, include prefix and namespace were made to agree (docs/layout.md):
// the deprecated include paths, namespaces and targets must still build it,
// and what it calls must still answer. Built against the build tree (ctest's
// deprecated.earlier_names) and against an installed package (install.consumer).
#include <cstdio>
#include <vector>

#include <switchyard/collectives/operation.hpp>  // now switchyard/model/collectives/
#include <switchyard/model/calibration.hpp>  // now switchyard/model/calibration/
#include <switchyard/schedulers/redistribution/ldd.hpp>  // its namespace is now schedulers::redistribution

int main() {
  const std::vector<switchyard::redistribution::Index> extent = switchyard::redistribution::parse_extent("6x4");
  const bool extent_ok = extent.size() == 2 && extent[0] == 6 && extent[1] == 4;
  const bool algorithm_ok =
      switchyard::collectives::is_algorithm(switchyard::collectives::Operation::all_to_all, "1-lev-dir") &&
      !switchyard::collectives::is_algorithm(switchyard::collectives::Operation::all_to_all, "no-such-algorithm");
  const bool calibration_ok = switchyard::model::CalibrationOptions{}.rounds > 0;
  if (!extent_ok || !algorithm_ok || !calibration_ok) {
    std::printf("earlier names: wrong answers (extent %d, algorithm %d, calibration %d)\n", extent_ok, algorithm_ok,
                calibration_ok);
    return 1;
  }
  std::printf("earlier names: ok\n");
  return 0;
}
