#pragma once
/// @file
/// The names of processes, shared by the pure libraries (matrices, schedules)
/// and the transport, so that pure code need not include the transport.

#include <cstdint>

namespace switchyard {

/// A process's rank: its number in a job or a communicator, from 0.
using Rank = std::uint32_t;

}  // namespace switchyard
