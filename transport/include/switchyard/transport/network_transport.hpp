#pragma once
// The interface of the transport towards the cores of other nodes, and what
// it tells the endpoint of rendezvous payloads. The endpoint sees only this;
// the implementation over MPI is mpi_transport.hpp's (make_mpi_transport()),
// whose objects only programs that link switchyard::mpi_transport contain.

#include <cstddef>
#include <cstdint>

#include "switchyard/transport/requests.hpp"
#include "switchyard/transport/route_table.hpp"
#include "switchyard/transport/transport.hpp"

namespace switchyard::detail {

class MpiWorld;

// What the network transport tells the endpoint of a rendezvous payload.
class PayloadSink {
 public:
  virtual void payload_sent(SendState& s) = 0;
  virtual void payload_received(RecvState& r) = 0;

 protected:
  ~PayloadSink() = default;
};

// The transport towards the cores of other nodes. Route::node is always
// another node's; packets towards one core go in order.
class NetworkTransport : public Transport {
 public:
  // The batch limit: a core's staged packets towards one core go in one
  // MPI message; beyond this many slots a batch leaves at once.
  static constexpr std::size_t kAutoFlushSlots = 4096;  // 64 KiB
  // Batches towards one core whose MPI_Isend has not completed yet (their
  // buffers are reused once it has); further packets wait in the staging.
  static constexpr std::size_t kMaxBatchesInFlight = 4;
  // Batches up to this many slots (header included) land in the receiving
  // core's pre-posted receives; a larger one (rare: over a full auto-flush,
  // or a large active message) is announced there and received on its own.
  static constexpr std::size_t kPostedBatchSlots = kAutoFlushSlots + 512;  // 72 KiB
  // For job number `job` (MpiWorld::begin_job()'s): this worker is core `core` of this node; a packet
  // is accepted once at most `window_slots` slots posted before it are
  // uncredited by their destination.
  virtual void attach(MpiWorld& world, const RouteTable& routes, std::uint32_t core, std::uint64_t job,
                      std::uint64_t window_slots, PayloadSink& sink) = 0;
  virtual void detach() = 0;
  // This node's processes have all finished: from now on every slot taken is
  // credited back at the next flush, so that the senders can drain.
  virtual void finishing() = 0;
  // A rendezvous message's payload: one MPI_Issend from s's buffer to the
  // destination's node; sink.payload_sent(s) once the receive took it.
  virtual void send_payload(const Route& to, SendState& s) = 0;
  // The payload of rendezvous `request` of a process on core `from`, straight
  // into `into` (size bytes); sink.payload_received(r) once it is there.
  virtual void receive_payload(const Route& from, RequestId request, RecvState& r, std::byte* into,
                               std::uint64_t size) = 0;
  // Whether MPI requests of this worker are outstanding (batches not sent or
  // not credited, payloads not moved).
  virtual bool has_requests() const = 0;
};

}  // namespace switchyard::detail
