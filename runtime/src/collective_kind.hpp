#pragma once
// Which collective a call is: the one engine behind every collective
// (process_collectives.cpp) branches on it. process.hpp declares it opaque, so
// that the installed header names the type without its values.

#include <cstdint>

namespace switchyard::detail {

// std::int32_t: a core's leader stamps its share with the kind (CallStamp),
// so its size is part of what leaders exchange.
enum class CollectiveKind : std::int32_t {
  kNone = -1,  // a collective slot no call has claimed; a share without a stamp
  kBarrier,
  kAllgather,
  kAllreduce,
  kScan,
  kBroadcast,
  kAllgatherSplit,
};

}  // namespace switchyard::detail
