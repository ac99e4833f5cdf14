#pragma once
// The mailbox between two cores: a bounded lock-free single-producer /
// single-consumer ring of packets (Boost.Lockfree spsc_queue), one per ordered
// pair of cores, as in Seastar. Only the worker thread of the source core pushes
// and only the worker thread of the destination core pops, so no slot is ever
// contended and no compare-and-swap is needed; spsc_queue keeps its read and
// write indices on separate cache lines. The capacity is the mailbox capacity:
// a sender that finds the ring full waits, it never drops or overwrites.

#include <boost/lockfree/spsc_queue.hpp>

#include <cstddef>

#include "switchyard/transport/packet.hpp"

namespace switchyard::detail {

class Channel {
 public:
  explicit Channel(std::size_t capacity) : ring_(capacity) {}

  // Producer side. Pushes as many of `count` packets as fit, in order; returns how many.
  std::size_t push(const Packet* packets, std::size_t count) { return ring_.push(packets, count); }
  bool push(const Packet& packet) { return ring_.push(packet); }

  // Consumer side. Pops up to `max` packets in one batch; returns how many.
  std::size_t pop(Packet* out, std::size_t max) { return ring_.pop(out, max); }
  bool has_packets() const { return ring_.read_available() != 0; }

 private:
  boost::lockfree::spsc_queue<Packet> ring_;
};

}  // namespace switchyard::detail
