#pragma once
// The transport interface: how a core's endpoint moves packets to other cores.
// A worker owns one transport per kind of link and drives it: post() packets
// (and publish() those a running process posted), flush() what is left at the
// end of the round, poll() arrivals into the endpoint. Two implement it: the shared-memory transport (rings
// between the cores of one node, shared_memory_transport.hpp) and the network
// transport towards the cores of other nodes (NetworkTransport, which adds
// rendezvous payloads and the end of a job across nodes; its MPI
// implementation is switchyard::transport_mpi's, transport/mpi/). The endpoint picks one by the destination's node;
// nothing above the endpoint knows which transport a message took.

#include <cstdint>
#include <span>

#include "route_table.hpp"
#include "switchyard/transport/wire.hpp"

namespace switchyard::detail {

// What a transport hands arrivals to.
class ArrivalSink {
 public:
  // One packet: its header and its payload (eager bytes, a rendezvous
  // address, an active message's body), valid only during the call. Packets
  // from one core arrive in the order they were posted.
  virtual void arrived(const WireHeader& header, std::span<const std::byte> payload) = 0;

 protected:
  ~ArrivalSink() = default;
};

struct TransportStats {
  std::uint64_t slots_received = 0;  // 16-byte slots that arrived from other cores
  std::uint64_t ring_full = 0;  // pushes that found a ring full
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Queues a packet for `to`; the payload is copied before post() returns.
  // Returns the packet's sequence number towards that core.
  virtual std::uint64_t post(const Route& to, const WireHeader& header, std::span<const std::byte> payload) = 0;
  // Whether packet `seq` towards `to` is within the flow-control window: at
  // most a ring's capacity of packets posted before it is still waiting to
  // enter the ring. An eager send completes once its packet is.
  virtual bool accepted(const Route& to, std::uint64_t seq) const = 0;
  // Publishes now what post() queued towards `to`, rather than at the next
  // flush(): the endpoint calls it for what a running process posts, so that
  // the packet reaches its peer while the process goes on computing (its core
  // switches, and flushes, only once the process waits). A packet that finds
  // no room stays queued, for flush(). Returns whether anything moved.
  virtual bool publish(const Route& to) = 0;
  // post() and then publish() of `to`, in one call: what a running process
  // posts. A transport may move the packet straight to its link when nothing
  // posted before waits for it.
  virtual std::uint64_t post_published(const Route& to, const WireHeader& header, std::span<const std::byte> payload) {
    const std::uint64_t seq = post(to, header, payload);
    publish(to);
    return seq;
  }
  // Publishes what post() queued: one bulk push per destination, each followed
  // by one check of the destination's doorbell. Returns whether anything moved.
  virtual bool flush() = 0;
  // Hands every packet that has arrived to `sink`. Returns whether any did.
  virtual bool poll(ArrivalSink& sink) = 0;
  // Whether poll() would find a packet (asked before the worker sleeps).
  virtual bool has_arrivals() const = 0;
  // Whether packets are queued that a full ring did not take yet.
  virtual bool has_backlog() const = 0;
  // Whether packets were posted since the last flush (or wait from it).
  virtual bool has_staged() const = 0;
  virtual const TransportStats& stats() const = 0;
};

}  // namespace switchyard::detail
