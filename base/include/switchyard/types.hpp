#pragma once
// The names of processes, shared by the pure libraries (matrices, schedules)
// and the transport, so that pure code need not include the transport.

#include <cstdint>

namespace switchyard {

using Rank = std::uint32_t;

}  // namespace switchyard
