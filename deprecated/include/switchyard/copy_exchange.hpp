#pragma once
/// @file
/// Deprecated: include switchyard/compiled_exchange.hpp. The compiled
/// exchange's types and functions took its one name (CompiledRun,
/// run_compiled_exchange, ...); their earlier names stay there as deprecated
/// aliases. This header forwards.
#ifndef SWITCHYARD_QUIET_DEPRECATED_HEADERS
#pragma GCC warning "switchyard/copy_exchange.hpp is deprecated: include switchyard/compiled_exchange.hpp"
#endif

#include "switchyard/compiled_exchange.hpp"
