#pragma once
/// @file
/// Deprecated: include switchyard/model/collectives/collective_plan.hpp, whose names are
/// in switchyard::model::collectives. This header forwards, and keeps the
/// namespace switchyard::collectives as an alias.
#ifndef SWITCHYARD_QUIET_DEPRECATED_HEADERS
#pragma GCC warning \
    "switchyard/collectives/collective_plan.hpp is deprecated: include switchyard/model/collectives/collective_plan.hpp"
#endif

#include "switchyard/model/collectives/collective_plan.hpp"

namespace switchyard {
namespace collectives = model::collectives;
}  // namespace switchyard
