#include "endpoint.hpp"

#include <cstring>
#include <utility>

#include "copy_bytes.hpp"
#include "switchyard/assert.hpp"

namespace switchyard::detail {

namespace {

const std::byte* address_in(std::span<const std::byte> payload) noexcept {
  std::uint64_t address;
  std::memcpy(&address, payload.data(), sizeof address);
  return reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address));
}

}  // namespace

void Endpoint::start(const EndpointConfig& config) {
  routes_ = config.routes;
  node_ = config.node;
  core_ = config.core;
  eager_limit_ = config.eager_limit;
  network_eager_limit_ = config.network_eager_limit;
  transport_ = config.transport;
  network_ = config.network;
  client_ = config.client;
  cancelling_ = false;
  polling_ = false;
  awaited_core_ = kNoCore;
  trace_clock_ = config.trace_clock;
  mailboxes_.assign(config.local_ranks, Mailbox{});
  waiting_.assign(routes_->global_cores(), WaitingSends{});
  waiting_count_ = 0;
  sends_.reset();
  recvs_.reset();
  envelopes_.reset();
}

UnreceivedMessages Endpoint::stop() {
  // Messages nobody took in (a cancelled job, or receives never posted) give their staging back.
  UnreceivedMessages unreceived;
  for (std::uint32_t i = 0; i < mailboxes_.size(); ++i) {
    mailboxes_[i].clear([&](Envelope* e) {
      unreceived.add(e->src, i, e->context, e->tag, e->size);
      free_envelope(e);
    });
  }
  for (const LocalActive& a : local_active_) {
    if (a.body) staging_.release(a.body, a.size);
  }
  local_active_.clear();
  return unreceived;
}

// --- sending ---

template <class T>
[[gnu::always_inline]] inline void Endpoint::send_on(T& transport, SendState& s, const Route& to, const WireHeader& h,
                                                     bool eager, bool synchronous) {
  if (!eager) {
    // The payload is the first word. The second only makes the object as
    // large as copy_bytes's widest move, which GCC's -Warray-bounds would
    // otherwise see read past it on a path through push_packet's loop that
    // it cannot rule out (the payload's 8 bytes are all that is read).
    const std::uint64_t address[2] = {static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s.data)), 0};
    post(transport, to, h, std::as_bytes(std::span<const std::uint64_t, 1>(address, 1)), s.size >= kFlushAtOnceBytes);
    return;  // complete on kSendDone
  }
  const std::uint64_t seq = post(transport, to, h, {s.data, static_cast<std::size_t>(s.size)});
  if (synchronous) return;  // complete on kSendDone
  if (transport.accepted(to, seq)) {
    s.done = true;
  } else {
    wait_for_room(s, routes_->global_core(to), seq);
  }
}

// Inline in send(), which has just written s: its fields come from registers.
[[gnu::always_inline]] inline void Endpoint::send_remote(SendState& s, ContextId context, Rank src, bool eager,
                                                         bool synchronous) {
  const WireHeader h =
      make_wire_header(eager ? WireKind::kEager : WireKind::kRendezvous, synchronous ? WireHeader::kSynchronous : 0,
                       s.size, context, src, s.dst, s.tag, s.id);
  const Route& to = route(s.dst);
  if (to.node == node_) return send_on(*transport_, s, to, h, eager, synchronous);
  if (eager) return send_on(*network_, s, to, h, eager, synchronous);
  const std::uint64_t unused = s.size;  // the payload slot: read by nobody
  post(*network_, to, h, std::as_bytes(std::span<const std::uint64_t, 1>(&unused, 1)));
  s.over_network = true;
  network_->send_payload(to, s);
  // complete once the receive took the payload
}

SendState* Endpoint::send(std::span<const std::byte> bytes, Rank src, Rank dst, ContextId context, Tag tag,
                          bool synchronous) {
  const Route& to = route(dst);
  const bool eager = bytes.size() <= (to.node == node_ ? eager_limit_ : network_eager_limit_);
  if (eager && !synchronous && to.node == node_) [[likely]] {
    if (to.core == core_) {
      // A buffered send to a process of this core: complete once it is in
      // the receive or in the mailbox, here and now. Its ticket holds the
      // endpoint's one complete state, as below.
      send_buffered_here(bytes, context, src, dst, tag);
      return &sent_;
    }
    // A buffered send to another core of this node, the common case: its
    // packet names no request (nobody answers it), and once the packet is
    // within the ring's window the send is complete. Its ticket then holds
    // the endpoint's one complete state: nothing is taken from the pool or
    // given back, and the send writes its packet and little else.
    const WireHeader h = make_wire_header(WireKind::kEager, 0, bytes.size(), context, src, dst, tag, 0);
    const std::uint64_t seq = post(*transport_, to, h, bytes);
    if (transport_->accepted(to, seq)) [[likely]]
      return &sent_;
    SendState* s = new_send(bytes, src, dst, tag);
    wait_for_room(*s, routes_->global_core(to), seq);
    return s;
  }
  SendState* s = new_send(bytes, src, dst, tag);
  if (local(dst)) {
    send_single_copy_here(*s, context, src);
  } else {
    send_remote(*s, context, src, eager, synchronous);
  }
  return s;
}

SendState* Endpoint::new_send(std::span<const std::byte> bytes, Rank src, Rank dst, Tag tag) {
  SendState* s = sends_.acquire();
  s->data = bytes.data();
  s->size = bytes.size();
  s->owner = src;
  s->dst = dst;
  s->tag = tag;
  s->done = false;
  s->over_network = false;
  return s;
}

[[gnu::always_inline]] inline bool Endpoint::take_in_posted(Mailbox& mailbox, ContextId context, Rank src, Tag tag,
                                                            std::span<const std::byte> payload) {
  RecvState* r = mailbox.match_posted(context, src, tag);
  if (!r) return false;
  take_in(*r, src, payload.size(), payload.data());  // the one copy: sender's buffer to the receive's
  client_->wake(r->owner);
  return true;
}

void Endpoint::send_buffered_here(std::span<const std::byte> bytes, ContextId context, Rank src, Rank dst, Tag tag) {
  Mailbox& mailbox = mailboxes_[route(dst).local];
  if (take_in_posted(mailbox, context, src, tag, bytes)) return;
  // Buffered, as across cores: the sender may reuse its buffer at once. The
  // envelope owes no completion, so it names no request.
  Envelope* e = make_envelope(context, src, tag, bytes.size(), sent_.id);
  copy_bytes(e->stage(staging_, bytes.size()), bytes.data(), bytes.size());
  mailbox.queue_unexpected(e);
  client_->wake(dst);  // a process waiting for a condition looks again
}

void Endpoint::send_single_copy_here(SendState& s, ContextId context, Rank src) {
  Mailbox& mailbox = mailboxes_[route(s.dst).local];
  if (take_in_posted(mailbox, context, src, s.tag, {s.data, static_cast<std::size_t>(s.size)})) {
    s.done = true;
    return;
  }
  Envelope* e = make_envelope(context, src, s.tag, s.size, s.id);
  e->remote = s.data;  // read when taken in, which completes the send
  e->owes_send_done = true;
  mailbox.queue_unexpected(e);
  client_->wake(s.dst);  // a process waiting for a condition looks again
}

void Endpoint::wait_for_room(SendState& s, std::uint32_t global_core, std::uint64_t seq) {
  WaitingSends& w = waiting_[global_core];
  // A core's waiting sends are in their ring's order, which flush() relies on
  // when it stops at the first one not accepted.
  SWITCHYARD_ASSERT(!w.tail || w.tail->seq < seq);
  s.core = global_core;
  s.seq = seq;
  s.next_waiting = nullptr;
  (w.tail ? w.tail->next_waiting : w.head) = &s;
  w.tail = &s;
  ++waiting_count_;
}

SendState* Endpoint::post_active(Rank src, Rank dst, ContextId context, Tag handler, std::span<const std::byte> body) {
  if (local(dst)) {
    std::byte* copy = nullptr;
    if (!body.empty()) {
      copy = staging_.acquire(body.size());
      std::memcpy(copy, body.data(), body.size());
    }
    local_active_.push_back(LocalActive{context, dst, src, handler, copy, body.size()});
    return nullptr;
  }
  const WireHeader h = make_wire_header(WireKind::kActive, 0, body.size(), context, src, dst, handler, 0);
  const Route& to = route(dst);
  const std::uint64_t seq = post_to(to, h, body);
  if (transport_for(to).accepted(to, seq)) return nullptr;
  SendState* s = sends_.acquire();
  s->owner = src;
  s->dst = dst;
  s->done = false;
  wait_for_room(*s, routes_->global_core(to), seq);
  return s;
}

SendState* Endpoint::try_remote_lock(Rank src, Rank dst, ContextId context) {
  SendState* s = sends_.acquire();
  s->owner = src;
  s->dst = dst;
  s->done = false;
  s->granted = false;
  post_lock_packet(dst, WireKind::kLockTry, 0, context, src, dst, s->id);
  return s;
}

void Endpoint::release_remote_lock(Rank src, Rank dst, ContextId context) {
  post_lock_packet(dst, WireKind::kLockRelease, 0, context, src, dst, 0);
}

// Posted whatever the flow-control window (the requester waits for the
// answer, not for room): no payload, and at most one try per process in flight.
void Endpoint::post_lock_packet(Rank to, WireKind kind, std::uint8_t flags, ContextId context, Rank src, Rank dst,
                                RequestId request) {
  post_to(route(to), make_wire_header(kind, flags, 0, context, src, dst, 0, request), {});
}

// The owner's side of a try: a job being cancelled grants nothing more.
void Endpoint::answer_lock_try(const WireHeader& h) {
  const bool granted = !cancelling_ && client_->try_busy_lock(h.context, h.dst);
  post_lock_packet(h.src, WireKind::kLockReply, granted ? WireHeader::kGranted : 0, h.context, h.dst, h.src, h.request);
}

bool Endpoint::flush() {
  bool moved = transport_->flush();
  if (network_) moved |= network_->flush();
  if (waiting_count_ == 0) return moved;
  for (std::uint32_t c = 0; c < waiting_.size(); ++c) {
    WaitingSends& w = waiting_[c];
    if (!w.head) continue;
    const Route to = routes_->core_route(c);
    Transport& transport = transport_for(to);
    while (w.head && transport.accepted(to, w.head->seq)) {
      SendState* s = std::exchange(w.head, w.head->next_waiting);
      if (!w.head) w.tail = nullptr;
      SWITCHYARD_ASSERT(waiting_count_ > 0 && !s->done);
      --waiting_count_;
      s->done = true;
      client_->wake(s->owner);
    }
  }
  return moved;
}

void Endpoint::complete_send(Rank sender, RequestId request, std::uint64_t bytes) {
  if (local(sender)) {
    SendState& s = sends_[request];
    SWITCHYARD_ASSERT(!s.done);  // a send completes once
    s.done = true;
    client_->wake(s.owner);
    return;
  }
  post_to(route(sender), make_wire_header(WireKind::kSendDone, 0, 0, 0, 0, sender, 0, request), {},
          bytes >= kFlushAtOnceBytes);
}

// --- receiving ---

RecvState* Endpoint::post_recv(std::span<std::byte> target, bool has_target, Rank owner, ContextId context, Rank src,
                               Tag tag) {
  RecvState* r = recvs_.acquire();
  r->context = context;
  r->src = src;
  r->tag = tag;
  r->owner = owner;
  r->target = target;
  r->has_target = has_target;
  r->done = false;
  r->truncated = false;
  // Already arrived: taken in at once, by the process itself, which needs no waking.
  if (Envelope* e = mailboxes_[route(owner).local].post(r)) {
    take_in(*r, *e);
  } else if (src != kAnySource && !polling_) {
    // It may lie in the ring from its sender's core, which the worker polls
    // only between processes: the process reads that ring itself, up to its
    // message. The packets before it go where the poll would send them; the
    // message is matched as it is read, with one copy, no envelope and no
    // wake, and those after it stay in the ring for the next receives.
    const Route& from = route(src);
    if (from.node == node_ && from.core != core_) {
      transport_->deliver_until(from.core, *this, r->done);
      if (!r->done) awaited_core_ = from.core;
    }
  }
  return r;
}

void Endpoint::release(RecvState* r) {
  r->payload.resize_uninitialized(0);  // drop a heap payload now rather than when the state is reused
  recvs_.release(r);
}

void Endpoint::take_in(RecvState& r, Rank src, std::uint64_t size, const std::byte* payload) {
  SWITCHYARD_ASSERT(!r.done);  // a receive is matched once
  const std::uint64_t started = trace_clock_ && size > eager_limit_ ? trace_clock_() : 0;
  r.sender = src;
  r.size = size;
  r.truncated = r.has_target && size > r.target.size();
  if (r.has_target) {
    if (!r.truncated) copy_bytes(r.target.data(), payload, size);
  } else {
    r.payload.resize_uninitialized(size);
    copy_bytes(r.payload.data(), payload, size);
  }
  r.done = true;
  if (trace_clock_) [[unlikely]]
    client_->delivered(r, started);
}

void Endpoint::take_in(RecvState& r, Envelope& e) {
  if (e.from_network) {
    take_in_from_network(r, e.src, e.size, e.request);
    free_envelope(&e);
    return;
  }
  take_in(r, e.src, e.size, e.staged ? e.staged : e.remote);
  if (e.owes_send_done) complete_send(e.src, e.request, e.size);
  free_envelope(&e);
}

void Endpoint::take_in_from_network(RecvState& r, Rank src, std::uint64_t size, RequestId request) {
  SWITCHYARD_ASSERT(!r.done);  // a receive is matched once
  r.sender = src;
  r.size = size;
  r.truncated = r.has_target && size > r.target.size();
  std::byte* into = r.target.data();
  if (!r.has_target || r.truncated) {
    // A truncated message is received all the same (into the payload buffer,
    // dropped with the receive), so that its sender completes.
    r.payload.resize_uninitialized(size);
    into = r.payload.data();
  }
  network_->receive_payload(route(src), request, r, into, size);
}

void Endpoint::cancel() {
  cancelling_ = true;
  if (!network_) return;
  for (Mailbox& m : mailboxes_) {
    m.remove_unexpected_if([](const Envelope& e) { return e.from_network; },
                           [this](Envelope* e) {
                             drop_from_network(e->src, e->size, e->request);
                             free_envelope(e);
                           });
  }
}

void Endpoint::drop_from_network(Rank src, std::uint64_t size, RequestId request) {
  RecvState* r = recvs_.acquire();
  r->owner = kAnySource;
  r->has_target = false;
  r->truncated = false;
  r->payload.resize_uninitialized(size);
  network_->receive_payload(route(src), request, *r, r->payload.data(), size);
}

void Endpoint::payload_sent(SendState& s) {
  s.done = true;
  client_->wake(s.owner);
}

void Endpoint::payload_received(RecvState& r) {
  if (r.owner == kAnySource) {  // dropped (drop_from_network)
    release(&r);
    return;
  }
  if (r.truncated) r.payload.resize_uninitialized(0);
  r.done = true;
  if (trace_clock_) [[unlikely]]
    client_->delivered(r, 0);
  client_->wake(r.owner);
}

Envelope* Endpoint::make_envelope(ContextId context, Rank src, Tag tag, std::uint64_t size, RequestId request) {
  Envelope* e = envelopes_.acquire();
  e->context = context;
  e->src = src;
  e->tag = tag;
  e->size = size;
  e->remote = nullptr;
  e->staged = nullptr;
  e->owes_send_done = false;
  e->from_network = false;
  e->request = request;
  return e;
}

Envelope* Endpoint::envelope_of(const WireHeader& h, std::span<const std::byte> payload) {
  Envelope* e = make_envelope(h.context, h.src, h.tag, h.size, h.request);
  if (h.kind == WireKind::kRendezvous && route(h.src).node != node_) {
    e->from_network = true;
    return e;
  }
  if (h.kind == WireKind::kRendezvous) {
    e->remote = address_in(payload);
    e->owes_send_done = true;
    return e;
  }
  copy_bytes(e->stage(staging_, h.size), payload.data(), h.size);
  e->owes_send_done = (h.flags & WireHeader::kSynchronous) != 0;
  return e;
}

void Endpoint::free_envelope(Envelope* e) {
  e->unstage(staging_);
  envelopes_.release(e);
}

void Endpoint::arrived(const WireHeader& h, std::span<const std::byte> payload) {
  switch (h.kind) {
    case WireKind::kSendDone: {
      SendState& s = sends_[h.request];
      s.done = true;
      client_->wake(s.owner);
      return;
    }
    case WireKind::kActive:
      if (!cancelling_) client_->run_active(h.context, h.dst, h.src, h.tag, payload);
      return;
    case WireKind::kLockTry:
      answer_lock_try(h);
      return;
    case WireKind::kLockReply: {
      SendState& s = sends_[h.request];
      s.granted = (h.flags & WireHeader::kGranted) != 0;
      s.done = true;
      client_->wake(s.owner);
      return;
    }
    case WireKind::kLockRelease:
      client_->release_busy_lock(h.context, h.dst);
      return;
    case WireKind::kEager:
    case WireKind::kRendezvous:
      break;
  }
  if (cancelling_) {  // senders may be unwinding: nothing is read from them any more
    if (h.kind == WireKind::kRendezvous && route(h.src).node != node_) drop_from_network(h.src, h.size, h.request);
    return;
  }
  Mailbox& mailbox = mailboxes_[route(h.dst).local];
  if (RecvState* r = mailbox.match_posted(h.context, h.src, h.tag)) {
    const bool rendezvous = h.kind == WireKind::kRendezvous;
    if (rendezvous && route(h.src).node != node_) {
      take_in_from_network(*r, h.src, h.size, h.request);
      return;
    }
    // Rendezvous: the single copy, from the sender's buffer on its core.
    take_in(*r, h.src, h.size, rendezvous ? address_in(payload) : payload.data());
    client_->wake(r->owner);
    if (rendezvous || (h.flags & WireHeader::kSynchronous)) complete_send(h.src, h.request, h.size);
    return;
  }
  mailbox.queue_unexpected(envelope_of(h, payload));
  client_->wake(h.dst);
}

bool Endpoint::poll() {
  polling_ = true;
  bool any = transport_->poll(*this);
  if (network_) any |= network_->poll(*this);
  if (!local_active_.empty()) {
    // Handlers may queue more active messages; those run on the next poll.
    running_active_.swap(local_active_);
    for (const LocalActive& a : running_active_) {
      if (!cancelling_) client_->run_active(a.context, a.dst, a.src, a.handler, {a.body, a.size});
      if (a.body) staging_.release(a.body, a.size);
    }
    running_active_.clear();
    any = true;
  }
  polling_ = false;
  // Before the worker resumes a process, which may compute for long: the
  // completions and answers posted above must not wait for its next switch.
  if (transport_->has_staged()) transport_->flush();
  return any;
}

}  // namespace switchyard::detail
