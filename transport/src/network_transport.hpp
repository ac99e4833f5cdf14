#pragma once
// The interface of the transport towards the cores of other nodes, and what
// it tells the endpoint of rendezvous payloads. The endpoint and the worker
// see only this; a NetworkSession makes it (network_session.hpp), and the
// implementation over MPI is switchyard::transport_mpi's (transport/mpi/).

#include <cstddef>
#include <cstdint>

#include "route_table.hpp"
#include "switchyard/transport/requests.hpp"
#include "transport.hpp"

namespace switchyard::detail {

class NetworkJob;

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
  // For `job` (made by the session that made this transport): this worker is
  // core `core` of this node; a packet is accepted once at most
  // `window_slots` slots posted before it are uncredited by their destination.
  virtual void attach(NetworkJob& job, const RouteTable& routes, std::uint32_t core, std::uint64_t window_slots,
                      PayloadSink& sink) = 0;
  virtual void detach() = 0;
  // This node's processes have all finished: from now on every slot taken is
  // credited back at the next flush, so that the senders can drain.
  virtual void finishing() = 0;
  // The end of a job across nodes, called on every turn of the worker's loop
  // once this node's processes have all finished (and their active messages
  // run, or the job is cancelled), until it returns true: whether the job is
  // over on every node (NetworkJob::finished()). Meanwhile this core returns
  // every credit it owes at once (finishing()), waits until its own requests
  // have completed and its packets been credited (a packet is credited once
  // its receiver took it, a payload completes when it moved) and the failures
  // this node announced have been received, then counts itself drained
  // (NetworkJob::drained() once every core of the node has). The node's
  // cores then wait for every other node to drain too: once every node has,
  // every message of the job has been taken, and nothing is left in flight
  // for the next job. Until then the worker keeps polling, taking in (and
  // dropping) what other nodes still send.
  virtual bool end_job() = 0;
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
