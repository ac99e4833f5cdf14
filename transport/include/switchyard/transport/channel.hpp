#pragma once
// The ring between two cores: a bounded lock-free single-producer /
// single-consumer queue of 16-byte slots (Boost.Lockfree spsc_queue), one per
// ordered pair of cores, as in Seastar. Only the worker thread of the source
// core pushes and only the worker thread of the destination core pops, so no
// slot is contended and no compare-and-swap is needed.
//
// Layout across cores. spsc_queue keeps its write index (written by the
// producer) and its read index (written by the consumer) on separate cache
// lines; the Channel is cache-line aligned so that the write index's line is
// not shared with a neighbouring object either. Both indices are published
// with one release store per bulk push or pop, and the sender pushes a whole
// round's packets at once, so an index line crosses cores once per round, not
// once per message.
//
// The capacity is the ring capacity, counted in cache lines of slots: a
// sender that finds the ring full keeps its packets staged and pushes them as
// room appears; it never drops or overwrites.

#include <boost/lockfree/spsc_queue.hpp>

#include <cstddef>

#include "switchyard/transport/wire.hpp"

namespace switchyard::detail {

class alignas(kCacheLine) Channel {
 public:
  static constexpr std::size_t kSlotsPerLine = kCacheLine / sizeof(Slot);

  explicit Channel(std::size_t capacity_lines) : ring_(capacity_lines * kSlotsPerLine) {}

  // Producer side: pushes as many of `count` slots as fit, in order, with one
  // index update; returns how many.
  std::size_t push(const Slot* slots, std::size_t count) { return ring_.push(slots, count); }
  // Producer side: reads the consumer's index now, so that the next push finds
  // its line in this core's cache. A push must read it (to know the room
  // left), and the consumer wrote it when it last popped: read on the push's
  // path, that is a cache miss in series with the message; read here, right
  // after this core took the consumer's answer, the miss overlaps whatever
  // this core does before it sends again.
  void touch_consumer_index() const { (void)ring_.write_available(); }

  // Consumer side: pops up to `max` slots in one batch, with one index update; returns how many.
  std::size_t pop(Slot* out, std::size_t max) { return ring_.pop(out, max); }
  bool has_slots() const { return ring_.read_available() != 0; }

 private:
  boost::lockfree::spsc_queue<Slot> ring_;
};
static_assert(kOwnsCacheLines<Channel>, "the write index's line is shared with no neighbouring object");
static_assert(Channel::kSlotsPerLine * sizeof(Slot) == kCacheLine, "a ring's capacity counts whole lines of slots");

}  // namespace switchyard::detail
