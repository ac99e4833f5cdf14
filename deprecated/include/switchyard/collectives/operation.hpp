#pragma once
/// @file
/// Deprecated: include switchyard/model/collectives/operation.hpp, whose names are
/// in switchyard::model::collectives. This header forwards, and keeps the
/// namespace switchyard::collectives as an alias.
#ifndef SWITCHYARD_QUIET_DEPRECATED_HEADERS
#pragma GCC warning \
    "switchyard/collectives/operation.hpp is deprecated: include switchyard/model/collectives/operation.hpp"
#endif

#include "switchyard/model/collectives/operation.hpp"

namespace switchyard {
namespace collectives = model::collectives;
}  // namespace switchyard
