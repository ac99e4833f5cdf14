#pragma once
/// @file
/// Deprecated: include switchyard/model/collectives/transfer_log.hpp, whose names are
/// in switchyard::model::collectives. This header forwards, and keeps the
/// namespace switchyard::collectives as an alias.
#ifndef SWITCHYARD_QUIET_DEPRECATED_HEADERS
#pragma GCC warning \
    "switchyard/collectives/transfer_log.hpp is deprecated: include switchyard/model/collectives/transfer_log.hpp"
#endif

#include "switchyard/model/collectives/transfer_log.hpp"

namespace switchyard {
namespace collectives = model::collectives;
}  // namespace switchyard
