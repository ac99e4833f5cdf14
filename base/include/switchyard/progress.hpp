#pragma once
/// @file
/// How long work says how far it has come: `done` of `total` steps, and what
/// it is at. Long library calls (phase statistics, calibration) take one,
/// optionally, and call it between steps, never on a hot path; the CLI draws
/// it as one line on stderr when that is a terminal (apps/progress_line.hpp).

#include <cstdint>
#include <functional>
#include <string_view>

namespace switchyard {

/// Told that `done` of `total` steps are done, and what the work is at (for a
/// caller to show); an empty Progress is not called.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total, std::string_view what)>;

}  // namespace switchyard
