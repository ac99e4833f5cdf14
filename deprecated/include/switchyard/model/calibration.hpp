#pragma once
/// @file
/// Deprecated: include switchyard/model/calibration/calibration.hpp, whose names are
/// in switchyard::model::calibration. This header forwards, and keeps the
/// names reachable as switchyard::model::*.
#ifndef SWITCHYARD_QUIET_DEPRECATED_HEADERS
#pragma GCC warning \
    "switchyard/model/calibration.hpp is deprecated: include switchyard/model/calibration/calibration.hpp"
#endif

#include "switchyard/model/calibration/calibration.hpp"

namespace switchyard::model {
using namespace calibration;  // NOLINT(google-build-using-namespace): the names' earlier home
}  // namespace switchyard::model
