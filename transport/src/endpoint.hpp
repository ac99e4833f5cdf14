#pragma once
// A core's endpoint: the message protocol, for the processes of one core.
//
//  * Eager (up to the eager limit, or the network's towards another node): the payload is copied into the packet and
//    the send completes at once, unless more than a ring's worth is already
//    queued towards that core; then it completes when its packet gets room.
//  * Rendezvous (larger): the packet carries the sender's buffer address; the
//    receiver's core copies the payload once, straight from the sender's buffer
//    into its destination, and answers kSendDone, which completes the send.
//  * Synchronous sends (ssend) of any size complete on kSendDone, sent once the
//    receiver has taken the message in.
//  * Same core: no ring. A message whose receive is posted is copied once from
//    the sender's buffer into the receive's; one that is not waits as
//    unexpected (eager: copied into the staging pool; larger: by reference).
//  * Another node (the network transport, network_transport.hpp): eager packets
//    as above; a rendezvous header goes with the round's batch, its payload
//    in one MPI message from the sender's buffer straight into the receive's,
//    received once the receive has matched the header. Both requests complete
//    when that MPI transfer does (no kSendDone).
//  * Active messages run their handler on the destination's core, from the
//    worker's loop (never nested in the sender).
//  * Busy locks of processes on other nodes (DRS_N's): a test-and-set is a
//    kLockTry packet to the lock's process's core, which arbitrates it with
//    the node's own atomic (EndpointClient::try_busy_lock) and answers with a
//    kLockReply; a release is a one-way kLockRelease.
//  * Taking in: a message is taken in as soon as it has arrived and a matching
//    receive is posted, whichever comes second. "Arrived" includes lying in
//    the ring from its sender's core: a receive for a sender on another core
//    of this node reads that ring itself, in order, up to its message
//    (SharedMemoryTransport::deliver_until), and so does its process's wait
//    before it parks (deliver_awaited).
//
// Everything here is touched by the core's worker thread only. The endpoint
// tells the runtime what happened through EndpointClient, and reaches other
// cores only through its transport.

#include <cstdint>
#include <span>
#include <vector>

#include "mailbox.hpp"
#include "network_transport.hpp"
#include "route_table.hpp"
#include "shared_memory_transport.hpp"
#include "staging_pool.hpp"
#include "switchyard/transport/requests.hpp"
#include "transport.hpp"

namespace switchyard::detail {

// The runtime's side: waking processes and running handlers.
class EndpointClient {
 public:
  // Something happened to process `rank` (of this core): a request of its
  // completed, or a message arrived for it.
  virtual void wake(Rank rank) = 0;
  // Runs active-message handler `handler` for process `dst` (of this core).
  virtual void run_active(ContextId context, Rank dst, Rank src, Tag handler, std::span<const std::byte> body) = 0;
  // With EndpointConfig::trace_clock: receive `r` has just taken its message
  // in, a copy that started at `started` on that clock (0: not timed, as for
  // copies up to the eager limit, too short to be worth a clock reading).
  virtual void delivered(const RecvState& r, std::uint64_t started) = 0;
  // A process of another node asks for / gives back the busy lock of process
  // `owner` (of this core) on communicator `context`: the same test-and-set,
  // on the same atomic, as this node's processes use.
  virtual bool try_busy_lock(ContextId context, Rank owner) = 0;
  virtual void release_busy_lock(ContextId context, Rank owner) = 0;

 protected:
  ~EndpointClient() = default;
};

// Messages that arrived for a core's processes and that none of them received
// before the job ended (Endpoint::stop): dropped with the job.
struct UnreceivedMessages {
  std::uint64_t count = 0;
  // The first one found: its sender (job rank), its receiver (index among the
  // core's processes), communicator, tag and size.
  Rank src = 0;
  std::uint32_t receiver = 0;
  ContextId context = 0;
  Tag tag = 0;
  std::uint64_t size = 0;

  // One more; the first one's particulars are kept.
  void add(Rank from, std::uint32_t to, ContextId on, Tag with, std::uint64_t bytes) noexcept {
    if (count++ == 0) {
      src = from;
      receiver = to;
      context = on;
      tag = with;
      size = bytes;
    }
  }
};

struct EndpointConfig {
  const RouteTable* routes = nullptr;
  std::uint32_t node = 0;
  std::uint32_t core = 0;
  std::uint32_t cores = 0;  // on this node
  std::uint32_t local_ranks = 0;  // processes on this core
  std::uint64_t eager_limit = 0;
  std::uint64_t network_eager_limit = 0;  // towards other nodes
  SharedMemoryTransport* transport = nullptr;  // to the other cores of this node
  NetworkTransport* network = nullptr;  // to the cores of other nodes; nullptr in a one-node job
  EndpointClient* client = nullptr;
  std::uint64_t (*trace_clock)() noexcept = nullptr;  // set: tell the client of every message taken in
};

class Endpoint final : public ArrivalSink, public PayloadSink {
 public:
  // What a running process posts (a send, an active message, the
  // completion its receive's take-in owes a sender) leaves at once: the
  // process may compute for long before its core switches, and its peer waits
  // meanwhile. What the worker's poll posts (completions of the copies it made,
  // answers to lock tries) goes with the poll's other packets, at its end,
  // except a completion of a copy of at least this many bytes, which leaves
  // at once: the copy is then the long part of the transfer.
  static constexpr std::uint64_t kFlushAtOnceBytes = 16384;
  Endpoint() = default;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // For a job; the pools keep their memory from earlier jobs.
  void start(const EndpointConfig& config);
  // The job is over: what nobody took in is dropped, and counted.
  UnreceivedMessages stop();
  // From now on no payload is read from another process's buffer and no
  // handler runs: the job is being cancelled and senders may unwind.
  // Rendezvous payloads from other nodes that nobody will take now are
  // received and dropped, so that their senders complete and the job can end
  // on every node.
  void cancel();

  // --- requests of this core's processes ---
  // The buffer comes first: as the first arguments it is passed in two
  // registers. Behind five others it went on the stack as two 8-byte words,
  // which the callee read back as one 16-byte load, a store-forwarding stall
  // on every receive (perf annotate of bench_latency's burst).
  SendState* send(std::span<const std::byte> bytes, Rank src, Rank dst, ContextId context, Tag tag, bool synchronous);
  RecvState* post_recv(std::span<std::byte> target, bool has_target, Rank owner, ContextId context, Rank src, Tag tag);
  // Takes a posted receive back, unmatched; false if it has already matched.
  bool withdraw(RecvState* r) noexcept { return mailboxes_[route(r->owner).local].withdraw(r); }
  // What `owner` left on communicator `context`: Mailbox::left_on.
  std::size_t left_on(Rank owner, ContextId context) const noexcept {
    return mailboxes_[route(owner).local].left_on(context);
  }
  void release(SendState* s) {
    if (s != &sent_) sends_.release(s);
  }
  void release(RecvState* r);
  // An active message. Returns nullptr once it is on its way, or a state that
  // completes when a full ring has room for it.
  SendState* post_active(Rank src, Rank dst, ContextId context, Tag handler, std::span<const std::byte> body);
  // Busy locks of processes on other nodes: a test-and-set sent to dst's core,
  // answered in the returned state (done, then granted); and a release of a
  // lock granted so.
  SendState* try_remote_lock(Rank src, Rank dst, ContextId context);
  void release_remote_lock(Rank src, Rank dst, ContextId context);

  // --- driven by the worker ---
  // Arrivals from the transport, then the queued same-core active messages;
  // then the packets that posted (to other cores of this node) leave.
  bool poll();
  // Publishes the round's packets, then completes the eager sends that got room.
  bool flush();
  // What a process about to park reads first (Worker::poll_alone): the ring
  // from the core of the last receive posted here that found nothing there,
  // up to the packet that sets `done` (its own receive's, most often).
  // Whether `done` is set. The packets after it stay in the ring, where the
  // next receives read them; a packet of another kind is left to poll().
  bool deliver_awaited(const bool& done) {
    if (awaited_core_ != kNoCore) transport_->deliver_until(awaited_core_, *this, done);
    return done;
  }
  bool has_arrivals() const {
    return !local_active_.empty() || transport_->has_arrivals() || (network_ && network_->has_arrivals());
  }
  // Whether single-copy sends wait for their receivers to take them (flush() completes them).
  bool has_waiting_sends() const noexcept { return waiting_count_ != 0; }
  // Whether packets wait for room, or (across nodes) MPI requests are outstanding.
  bool has_backlog() const { return transport_->has_backlog() || (network_ && network_->has_backlog()); }
  // Whether something waits for the end of the round: packets for the flush,
  // or same-core active messages for the next poll.
  bool has_staged() const {
    return !local_active_.empty() || transport_->has_staged() || (network_ && network_->has_staged());
  }

  void arrived(const WireHeader& header, std::span<const std::byte> payload) override;
  void payload_sent(SendState& s) override;
  void payload_received(RecvState& r) override;

 private:
  struct LocalActive {
    ContextId context;
    Rank dst, src;
    Tag handler;
    std::byte* body;  // from the staging pool; nullptr when empty
    std::uint64_t size;
  };

  const Route& route(Rank r) const noexcept { return (*routes_)[r]; }
  bool local(Rank r) const noexcept { return route(r).node == node_ && route(r).core == core_; }
  Transport& transport_for(const Route& to) noexcept {
    return to.node == node_ ? *transport_ : static_cast<Transport&>(*network_);
  }
  // Posts a packet towards `to` on `transport`: published at once when a
  // running process posts it (or `now`), else at the end of the poll. On
  // the shared-memory transport (T, final) the calls are direct and inline.
  template <class T>
  std::uint64_t post(T& transport, const Route& to, const WireHeader& header, std::span<const std::byte> payload,
                     bool now = false) {
    return !polling_ || now ? transport.post_published(to, header, payload) : transport.post(to, header, payload);
  }
  // post() on the transport towards `to`: this node's cores directly (the
  // final shared-memory transport), other nodes' through the network's.
  std::uint64_t post_to(const Route& to, const WireHeader& header, std::span<const std::byte> payload,
                        bool now = false) {
    return to.node == node_ ? post(*transport_, to, header, payload, now) : post(*network_, to, header, payload, now);
  }
  // A send's request from the pool, its fields set, not done.
  SendState* new_send(std::span<const std::byte> bytes, Rank src, Rank dst, Tag tag);
  // A send to a process of this core. Buffered (eager, not synchronous): into
  // its posted receive or an envelope of its mailbox, complete at once, with
  // no request. Otherwise (single copy, or synchronous): into its posted
  // receive, complete; or an envelope that points at the sender's bytes and
  // completes the send when a receive takes it.
  void send_buffered_here(std::span<const std::byte> bytes, ContextId context, Rank src, Rank dst, Tag tag);
  void send_single_copy_here(SendState& s, ContextId context, Rank src);
  // The message into a receive posted in `mailbox` that matches it, if any, its owner woken.
  bool take_in_posted(Mailbox& mailbox, ContextId context, Rank src, Tag tag, std::span<const std::byte> payload);
  void send_remote(SendState& s, ContextId context, Rank src, bool eager, bool synchronous);
  // send_remote()'s packet towards `to` on `transport`: eager, or a rendezvous within this node.
  template <class T>
  void send_on(T& transport, SendState& s, const Route& to, const WireHeader& h, bool eager, bool synchronous);
  // `global_core`: the destination's core as RouteTable::global_core numbers it.
  void wait_for_room(SendState& s, std::uint32_t global_core, std::uint64_t seq);
  // The payload of a matched message into its receive; completes the receive
  // (the caller wakes its process, unless that process is the one running).
  void take_in(RecvState& r, Rank src, std::uint64_t size, const std::byte* payload);
  void take_in(RecvState& r, Envelope& e);
  // A rendezvous from another node: its payload is received straight into r;
  // r completes in payload_received().
  void take_in_from_network(RecvState& r, Rank src, std::uint64_t size, RequestId request);
  // The payload of a rendezvous from another node that no receive will take (a cancelled job).
  void drop_from_network(Rank src, std::uint64_t size, RequestId request);
  void complete_send(Rank sender, RequestId request, std::uint64_t bytes);
  // A lock packet (no payload) towards the core of `to`; it leaves with the round's batch.
  void post_lock_packet(Rank to, WireKind kind, std::uint8_t flags, ContextId context, Rank src, Rank dst,
                        RequestId request);
  void answer_lock_try(const WireHeader& h);
  Envelope* make_envelope(ContextId context, Rank src, Tag tag, std::uint64_t size, RequestId request);
  Envelope* envelope_of(const WireHeader& h, std::span<const std::byte> payload);
  void free_envelope(Envelope* e);

  // Per job.
  const RouteTable* routes_ = nullptr;
  std::uint32_t node_ = 0, core_ = 0;
  std::uint64_t eager_limit_ = 0, network_eager_limit_ = 0;
  SharedMemoryTransport* transport_ = nullptr;
  NetworkTransport* network_ = nullptr;
  EndpointClient* client_ = nullptr;
  bool cancelling_ = false;
  bool polling_ = false;  // in poll(): what is posted now leaves at its end (posted())
  // The core (of this node) that the last receive posted here waits for,
  // when it found nothing in that ring (deliver_awaited); kNoCore: none yet.
  static constexpr std::uint32_t kNoCore = ~std::uint32_t{0};
  std::uint32_t awaited_core_ = kNoCore;
  std::uint64_t (*trace_clock_)() noexcept = nullptr;
  std::vector<Mailbox> mailboxes_;  // by local index
  // Eager sends waiting for room, per destination core (global numbering): FIFO, as their packets.
  struct WaitingSends {
    SendState* head = nullptr;
    SendState* tail = nullptr;
  };
  std::vector<WaitingSends> waiting_;
  std::uint64_t waiting_count_ = 0;
  std::vector<LocalActive> local_active_, running_active_;

  // Kept across jobs.
  // What send() returns for a buffered send within this node (to this core
  // or another) that is complete at once: one state for all of them, always
  // done, never in the pool (release() leaves it), with no request id that a
  // packet could name.
  SendState sent_{.id = kSharedCompleteSend, .done = true};
  RequestPool<SendState> sends_;
  RequestPool<RecvState> recvs_;
  RequestPool<Envelope> envelopes_;
  StagingPool staging_;
};

}  // namespace switchyard::detail
