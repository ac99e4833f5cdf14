#include "switchyard/process.hpp"

#include <cstring>
#include <string>

#include "switchyard/communicator.hpp"
#include "switchyard/detail/group.hpp"
#include "switchyard/detail/job.hpp"
#include "switchyard/detail/worker.hpp"

namespace switchyard {

using detail::Envelope;
using detail::PacketHeader;
using detail::PacketKind;
using detail::RecvState;
using detail::SendState;

Process::Process(detail::Job& job, detail::Worker& worker, Rank rank) : job_(job), worker_(worker), rank_(rank) {}

Rank Process::size() const noexcept { return job_.size(); }
int Process::core() const noexcept { return worker_.os_core(); }
BusyLock& Process::busy_lock(Rank r) { return world().busy_lock(r); }

void Process::check_cancelled() const {
  if (worker_.cancelling()) throw JobCancelled();
}

void Process::check_rank(const detail::Group& g, Rank r, const char* what) const {
  if (r >= g.size()) [[unlikely]]
    bad_rank(g, r, what);
}

void Process::bad_rank(const detail::Group& g, Rank r, const char* what) const {
  if (g.context() == 0) {
    throw InvalidArgument("switchyard: " + std::string(what) + " on rank " + std::to_string(rank_) + ": rank " +
                          std::to_string(r) + " is out of range (job has " + std::to_string(job_.size()) +
                          " processes)");
  }
  throw InvalidArgument("switchyard: " + std::string(what) + " on rank " + std::to_string(rank_) + ": rank " +
                        std::to_string(r) + " is out of range (communicator " + std::to_string(g.context()) +
                        " has " + std::to_string(g.size()) + " processes)");
}

void Process::check_user_tag(Tag t, const char* what) const {
  if (t >= kFirstReservedTag) [[unlikely]] {
    throw InvalidArgument("switchyard: " + std::string(what) + " on rank " + std::to_string(rank_) + ": tag " +
                          std::to_string(t) + " is reserved (user tags are below 2^31)");
  }
}

Process::ParkAwaiter Process::park(const char* what, Rank peer) {
  waiting_for_ = what;
  waiting_peer_ = peer;
  return ParkAwaiter{*this};
}

void Process::wake() {
  if (parked_) {
    parked_ = false;
    worker_.make_ready(this);
  }
}

const SendState& Process::state_of(const SendTicket& t) const {
  if (!t.state_) throw InvalidArgument("switchyard: rank " + std::to_string(rank_) + ": empty send ticket");
  return *t.state_;
}
RecvState& Process::state_of(RecvTicket& t) const {
  if (!t.state_) throw InvalidArgument("switchyard: rank " + std::to_string(rank_) + ": empty receive ticket");
  return *t.state_;
}

// --- request pools: a process's sends and receives in flight live here, so that
// a completion arriving from another core never points into a freed frame ---

SendState* Process::acquire_send() {
  if (free_sends_.empty()) return &send_pool_.emplace_back();
  SendState* s = free_sends_.back();
  free_sends_.pop_back();
  return s;
}
void Process::release_send(SendState* s) { free_sends_.push_back(s); }

RecvState* Process::acquire_recv() {
  if (free_recvs_.empty()) return &recv_pool_.emplace_back();
  RecvState* r = free_recvs_.back();
  free_recvs_.pop_back();
  return r;
}
void Process::release_recv(RecvState* r) {
  r->envelope.eager.resize_uninitialized(0);  // drop a heap payload now rather than when the state is reused
  r->envelope.single_copy = nullptr;
  r->envelope.completes = nullptr;
  r->result = Message{};
  free_recvs_.push_back(r);
}

// --- point to point ---

SendTicket Process::post_send(Rank dst, std::span<const std::byte> bytes, Tag tag) {
  return world().post_send(dst, bytes, tag);
}
SendTicket Process::post_ssend(Rank dst, std::span<const std::byte> bytes, Tag tag) {
  return world().post_ssend(dst, bytes, tag);
}
RecvTicket Process::post_recv(Rank src, Tag tag) { return world().post_recv(src, tag); }
RecvTicket Process::post_recv_into(Rank src, std::span<std::byte> buffer, Tag tag) {
  return world().post_recv_into(src, buffer, tag);
}

SendTicket Process::post_send_on(const detail::Group& g, Rank dst_in_group, std::span<const std::byte> bytes, Tag tag,
                                 bool synchronous) {
  check_cancelled();
  check_rank(g, dst_in_group, "send");
  const Rank dst = g.members().to_job(dst_in_group);
  SendState* s = acquire_send();
  *s = SendState{bytes.data(), bytes.size(), dst, tag, this, 0, false};
  const bool eager = bytes.size() <= job_.options().eager_limit;
  // Single-copy sends complete when the receiver has copied; synchronous eager
  // sends when the receiver has taken the message in; other eager sends when
  // the message is in the receiver's mailbox.
  const bool completed_by_receiver = !eager || synchronous;
  Process& q = job_.process(dst);
  if (&q.worker_ == &worker_) {
    // Same core: hand the message over directly; the ring is only for crossing cores.
    Envelope e;
    e.context = g.context();
    e.src = rank_;
    e.tag = tag;
    e.size = bytes.size();
    if (eager) {
      e.eager.resize_uninitialized(bytes.size());
      if (!bytes.empty()) std::memcpy(e.eager.data(), bytes.data(), bytes.size());
    } else {
      e.single_copy = s;
    }
    if (completed_by_receiver) {
      e.completes = s;
    } else {
      s->done = true;
    }
    q.deliver(std::move(e));
  } else {
    const std::uint32_t to = job_.worker_of(dst);
    PacketHeader h{};
    h.kind = PacketKind::kMessage;
    h.single_copy = !eager;
    h.synchronous = completed_by_receiver;
    h.context = g.context();
    h.tag = tag;
    h.src = rank_;
    h.dst = dst;
    h.size = bytes.size();
    h.handle = completed_by_receiver ? s : nullptr;
    const std::uint64_t seq = worker_.enqueue(to, h, bytes.data(), eager ? bytes.size() : 0);
    if (!completed_by_receiver) {
      s->ring_seq = seq;
      s->done = worker_.pushed(to) >= seq;
      if (!s->done) worker_.wait_for_push(to, s);
    }
  }
  return SendTicket(s, this);
}

RecvTicket Process::post_recv_on(const detail::Group& g, Rank src, Tag tag, std::span<std::byte> target,
                                 bool has_target) {
  check_cancelled();
  if (src != kAnySource) check_rank(g, src, "recv");
  RecvState* r = acquire_recv();
  r->context = g.context();
  r->src = src == kAnySource ? kAnySource : g.members().to_job(src);
  r->tag = tag;
  r->target = target;
  r->has_target = has_target;
  r->matched = false;
  r->done = false;
  r->truncated = false;
  if (mailbox_.post(r)) take_in(*r);
  return RecvTicket(r, this);
}

void Process::deliver(Envelope&& e) {
  // Once this worker has seen a cancellation, senders may be about to unwind:
  // their buffers are no longer read.
  if (RecvState* r = mailbox_.arrive(std::move(e)); r && !worker_.cancelling()) take_in(*r);
  notify();
}

void Process::take_in(RecvState& r) {
  Envelope& e = r.envelope;
  // The source as the receive's communicator numbers it.
  r.source = e.context == 0 ? e.src : job_.groups().find(e.context)->members().to_comm(e.src);
  r.truncated = r.has_target && e.size > r.target.size();
  std::byte* dst = nullptr;
  if (!r.truncated) {
    if (r.has_target) {
      dst = r.target.data();
    } else if (e.single_copy) {
      r.result = Message(r.source, e.tag, detail::ByteBuffer(e.size));
      dst = r.result.bytes().data();  // after the move: small payloads live inside the Message itself
    }
  }
  if (SendState* s = e.single_copy) {
    if (dst && e.size) std::memcpy(dst, s->data, e.size);  // the single copy: sender's buffer to its destination
  } else if (dst) {
    if (e.size) std::memcpy(dst, e.eager.data(), e.size);
  } else if (!r.truncated) {
    r.result = Message(r.source, e.tag, std::move(e.eager));
  }
  if (SendState* s = e.completes) {
    Process& sender = job_.process(e.src);
    if (&sender.worker_ == &worker_) {
      s->done = true;
      sender.notify();
    } else {
      PacketHeader h{};
      h.kind = PacketKind::kSendDone;
      h.src = rank_;
      h.dst = e.src;
      h.handle = s;
      worker_.enqueue(job_.worker_of(e.src), h, nullptr, 0);
    }
  }
  r.done = true;
}

void Process::check_truncation(const RecvState& r) const {
  if (!r.truncated) [[likely]]
    return;
  const Envelope& e = r.envelope;
  throw InvalidArgument("switchyard: recv_into on rank " + std::to_string(rank_) + ": message of " +
                        std::to_string(e.size) + " bytes from rank " + std::to_string(e.src) + " (tag " +
                        std::to_string(e.tag) + ") does not fit the " + std::to_string(r.target.size()) +
                        "-byte buffer");
}

bool Process::test(SendTicket& t) { return state_of(t).done; }

bool Process::test(RecvTicket& t) {
  RecvState& r = state_of(t);
  check_truncation(r);
  return r.done;
}

// --- active messages ---

void Process::post_active(Rank dst, HandlerId handler, std::span<const std::byte> body) {
  world().post_active(dst, handler, body);
}
Task<void> Process::send_active(Rank dst, HandlerId handler, std::span<const std::byte> body) {
  return world().send_active(dst, handler, body);
}

std::uint64_t Process::post_active_on(const detail::Group& g, Rank dst_in_group, HandlerId handler,
                                      std::span<const std::byte> body) {
  check_cancelled();
  check_rank(g, dst_in_group, "post_active");
  if (!job_.handler(handler)) {
    throw InvalidArgument("switchyard: post_active on rank " + std::to_string(rank_) + ": no handler registered for id " +
                          std::to_string(handler));
  }
  const Rank dst = g.members().to_job(dst_in_group);
  if (job_.worker_of(dst) == worker_.index()) {
    // Run from the worker loop, never nested in the sender.
    worker_.queue_local_active(g.context(), dst, rank_, handler, body);
    return 0;
  }
  PacketHeader h{};
  h.kind = PacketKind::kActive;
  h.context = g.context();
  h.tag = handler;
  h.src = rank_;
  h.dst = dst;
  h.size = body.size();
  return worker_.enqueue(job_.worker_of(dst), h, body.data(), body.size());
}

Task<void> Process::send_active_on(const detail::Group& g, Rank dst, HandlerId handler,
                                   std::span<const std::byte> body) {
  const std::uint64_t seq = post_active_on(g, dst, handler, body);
  if (seq == 0) co_return;
  const std::uint32_t to = job_.worker_of(g.members().to_job(dst));
  if (worker_.pushed(to) >= seq) co_return;
  SendState* s = acquire_send();
  *s = SendState{nullptr, 0, g.members().to_job(dst), 0, this, seq, false};
  worker_.wait_for_push(to, s);
  while (!s->done) co_await park("mailbox room towards", s->dst);
  release_send(s);
}

// --- waiting for several tickets ---

template <class Ticket>
Task<void> wait_all_of(Process& p, std::span<Ticket> tickets) {
  for (Ticket& t : tickets) {
    if (t.valid()) co_await p.wait(t);
  }
}

Task<void> Process::wait_all(std::span<SendTicket> tickets) { return wait_all_of(*this, tickets); }
Task<void> Process::wait_all(std::span<RecvTicket> tickets) { return wait_all_of(*this, tickets); }

template <class Ticket>
Task<std::size_t> wait_any_of(Process& p, std::span<Ticket> tickets) {
  auto first_done = [&] {
    std::size_t k = 0;
    bool any_valid = false;
    for (; k < tickets.size(); ++k) {
      if (!tickets[k].valid()) continue;
      any_valid = true;
      if (p.test(tickets[k])) return k;
    }
    return any_valid ? tickets.size() + 1 : tickets.size();
  };
  std::size_t k = first_done();
  if (k > tickets.size()) {
    co_await p.wait_until([&] { return (k = first_done()) <= tickets.size(); }, "any of several tickets");
  }
  co_return k;
}

Task<std::size_t> Process::wait_any(std::span<SendTicket> tickets) { return wait_any_of(*this, tickets); }
Task<std::size_t> Process::wait_any(std::span<RecvTicket> tickets) { return wait_any_of(*this, tickets); }

// --- scheduling ---

void Process::YieldAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  process_.resume_point_ = h;
  process_.worker_.make_ready(&process_);
}

// --- tickets ---

SendTicket& SendTicket::operator=(SendTicket&& o) noexcept {
  if (this != &o) {
    this->~SendTicket();
    state_ = std::exchange(o.state_, nullptr);
    owner_ = o.owner_;
  }
  return *this;
}
SendTicket::~SendTicket() {
  // An unfinished send stays in its process's pool until the job ends: a
  // completion may still arrive for it.
  if (state_ && state_->done) owner_->release_send(state_);
}

RecvTicket& RecvTicket::operator=(RecvTicket&& o) noexcept {
  if (this != &o) {
    this->~RecvTicket();
    state_ = std::exchange(o.state_, nullptr);
    owner_ = o.owner_;
  }
  return *this;
}
RecvTicket::~RecvTicket() {
  if (!state_) return;
  // A receive given up before its message came is withdrawn: a later message
  // must neither be written into a buffer that may be gone nor vanish into it.
  if (state_->done || owner_->mailbox_.withdraw(state_)) owner_->release_recv(state_);
}
Rank RecvTicket::source() const {
  if (!done()) throw InvalidArgument("switchyard: RecvTicket::source before the receive completed");
  return state_->source;
}
std::uint64_t RecvTicket::size() const {
  if (!done()) throw InvalidArgument("switchyard: RecvTicket::size before the receive completed");
  return state_->envelope.size;
}
Message RecvTicket::take_message() {
  if (!done()) throw InvalidArgument("switchyard: RecvTicket::take_message before the receive completed");
  return std::move(state_->result);
}

}  // namespace switchyard
