#include "switchyard/process.hpp"

#include <cstring>
#include <exception>
#include <string>

#include "group.hpp"
#include "job.hpp"
#include "switchyard/communicator.hpp"
#include "switchyard/trace.hpp"
#include "trace_buffer.hpp"
#include "worker.hpp"

namespace switchyard {

using detail::RecvState;
using detail::TraceBuffer;
using detail::TraceEvent;

namespace detail {
thread_local constinit std::uint64_t running_job = 0;
}  // namespace detail

Process::Process(detail::Job& job, detail::Worker& worker, Rank rank)
    : job_(job),
      worker_(worker),
      cancel_seen_(&worker.cancelling()),
      rank_(rank),
      global_core_(job.global_core(rank)),
      job_serial_(job.serial()) {}

Rank Process::size() const noexcept { return job_.size(); }
int Process::core() const noexcept { return worker_.os_core(); }
std::uint32_t Process::core_index() const noexcept { return worker_.index(); }
std::uint32_t Process::processes_on_core() const noexcept {
  return static_cast<std::uint32_t>(job_.local_processes(worker_.index()).size());
}
BusyLock& Process::busy_lock(Rank r) { return world().busy_lock(r); }
Process::BusyLockAwaiter Process::try_busy_lock(Rank r) { return world().try_busy_lock(r); }
void Process::release_busy_lock(Rank r) { world().release_busy_lock(r); }
bool Process::on_this_node(Rank job_rank) const noexcept { return job_.routes()[job_rank].node == job_.node(); }

void Process::not_in_its_job() const {
  // Communicator::group() names the job and the process's state; not_valid() throws.
  Communicator(const_cast<Process*>(this), world_, rank_).not_valid();
}

void Process::throw_cancelled() { throw JobCancelled(); }

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
                        std::to_string(r) + " is out of range (communicator " + std::to_string(g.context()) + " has " +
                        std::to_string(g.size()) + " processes)");
}

void Process::reserved_tag(Tag t, const char* what) const {
  throw InvalidArgument("switchyard: " + std::string(what) + " on rank " + std::to_string(rank_) + ": tag " +
                        std::to_string(t) + " is reserved (user tags are below 2^31)");
}

void Process::check_message_size(std::size_t bytes, const char* what) const {
  if (bytes > detail::kMaxMessageBytes) [[unlikely]]
    message_too_large(bytes, what);
}

void Process::message_too_large(std::size_t bytes, const char* what) const {
  throw InvalidArgument("switchyard: " + std::string(what) + " on rank " + std::to_string(rank_) + ": " +
                        std::to_string(bytes) + " bytes, more than a message may carry (" +
                        std::to_string(detail::kMaxMessageBytes) + ")");
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

bool Process::poll_before_parking(const bool& flag) noexcept { return worker_.poll_before_parking(flag); }

void Process::sleep_in_heap(std::coroutine_handle<> h, Clock::time_point deadline) noexcept {
  timer_expired_ = false;
  suspend_until(h, &timer_expired_, "its sleep's deadline", kAnySource);
  worker_.add_timer(deadline, this);  // never allocates: the heap has room for every process of the core
}

void Process::empty_ticket(const char* kind) const {
  throw InvalidArgument("switchyard: rank " + std::to_string(rank_) + ": empty " + kind +
                        " ticket (default-made or moved from)");
}

// --- point to point ---

detail::SendState* Process::post_send_request(const detail::Group& g, Rank dst, std::span<const std::byte> bytes,
                                              Tag tag, bool synchronous) {
  check_cancelled();
  check_rank(g, dst, "send");
  check_message_size(bytes.size(), "send");
  ++g.core(global_core_).traffic;  // taken back by the receive it matches (free())
  if (trace_) [[unlikely]]
    return traced_send(g, dst, bytes, tag, synchronous);
  return worker_.endpoint().send(bytes, rank_, g.members().to_job(dst), g.context(), tag, synchronous);
}

detail::RecvState* Process::post_recv_request(const detail::Group& g, Rank src, Tag tag, std::span<std::byte> target,
                                              bool has_target) {
  check_cancelled();
  if (src != kAnySource) check_rank(g, src, "recv");
  --g.core(global_core_).traffic;
  const Rank from = src == kAnySource ? kAnySource : g.members().to_job(src);
  return worker_.endpoint().post_recv(target, has_target, rank_, g.context(), from, tag);
}

void Process::truncated(const RecvState& r) const {
  throw InvalidArgument("switchyard: recv_into on rank " + std::to_string(rank_) + ": message of " +
                        std::to_string(r.size) + " bytes from rank " + std::to_string(r.sender) + " (tag " +
                        std::to_string(r.tag) + ") does not fit the " + std::to_string(r.target.size()) +
                        "-byte buffer");
}

// --- active messages ---

void Process::post_active(Rank dst, HandlerId handler, std::span<const std::byte> body) {
  world().post_active(dst, handler, body);
}
Task<void> Process::send_active(Rank dst, HandlerId handler, std::span<const std::byte> body) {
  return world().send_active(dst, handler, body);
}

detail::SendState* Process::post_active_on(const detail::Group& g, Rank dst, HandlerId handler,
                                           std::span<const std::byte> body) {
  check_cancelled();
  check_rank(g, dst, "post_active");
  check_message_size(body.size(), "post_active");
  if (!job_.handler(handler)) {
    throw InvalidArgument("switchyard: post_active on rank " + std::to_string(rank_) +
                          ": no handler registered for id " + std::to_string(handler));
  }
  const Rank to = g.members().to_job(dst);
  // Counted until its handler has run (Job::active_pending); another node's count is that node's own.
  if (on_this_node(to)) job_.active_pending.fetch_add(1, std::memory_order_relaxed);
  ++g.core(global_core_).traffic;  // taken back on dst's core once its handler ran
  return worker_.endpoint().post_active(rank_, to, g.context(), handler, body);
}

Task<void> Process::send_active_on(const detail::Group& g, Rank dst, HandlerId handler,
                                   std::span<const std::byte> body) {
  // Posted when called, as the other sends; the task only waits for ring room.
  detail::SendState* s = post_active_on(g, dst, handler, body);
  return [](Process& p, detail::SendState* s) -> Task<void> {
    if (!s) co_return;
    while (!s->done) co_await p.park("ring room towards", s->dst);
    p.worker_.endpoint().release(s);
  }(*this, s);
}

// --- busy locks ---

Process::BusyLockAwaiter Process::try_busy_lock_on(const detail::Group& g, Rank r) {
  check_cancelled();
  check_rank(g, r, "try_busy_lock");
  const Rank job = g.members().to_job(r);
  if (on_this_node(job)) return BusyLockAwaiter(*this, nullptr, job, g.busy_lock(r).try_acquire());
  return BusyLockAwaiter(*this, worker_.endpoint().try_remote_lock(rank_, job, g.context()), job, false);
}

void Process::release_busy_lock_on(const detail::Group& g, Rank r) {
  check_rank(g, r, "release_busy_lock");
  const Rank job = g.members().to_job(r);
  if (on_this_node(job)) {
    g.busy_lock(r).release();
  } else {
    ++g.core(global_core_).traffic;  // taken back on the owner's core
    worker_.endpoint().release_remote_lock(rank_, job, g.context());
  }
}

bool Process::BusyLockAwaiter::await_resume() {
  if (!request_) return granted_;
  process_.resumed();  // throws in a cancelled job: the destructor then leaves the request to the pool's reset
  granted_ = request_->granted;
  process_.worker_.endpoint().release(std::exchange(request_, nullptr));
  return granted_;
}

// A request not answered yet stays in its core's pool until the job ends: the
// answer may still come and write into it.
Process::BusyLockAwaiter::~BusyLockAwaiter() {
  if (request_ && request_->done) process_.worker_.endpoint().release(request_);
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
  if (process_.trace_) [[unlikely]]
    process_.trace_wait_begin("yield");
  process_.worker_.make_ready(&process_);
}

// --- tracing ---

void Process::trace_wait_begin(const char* name) const noexcept {
  wait_event_ = trace_->reserve();
  if (!wait_event_) return;
  // A yield is not parked: it waits for nothing but its turn.
  *wait_event_ = TraceEvent{.begin = TraceBuffer::now(),
                            .name = name,
                            .note = parked_ ? waiting_for_ : nullptr,
                            .rank = rank_,
                            .src = parked_ ? waiting_peer_ : kAnySource,
                            .job = wait_event_->job,
                            .category = TraceCategory::wait};
}

void Process::resumed_traced_or_cancelled() const {
  if (wait_event_) trace_wait_end();
  check_cancelled();
}

void Process::trace_wait_end() const noexcept {
  wait_event_->end = TraceBuffer::now();
  wait_event_ = nullptr;
}

detail::SendState* Process::traced_send(const detail::Group& g, Rank dst, std::span<const std::byte> bytes, Tag tag,
                                        bool synchronous) {
  const Rank to = g.members().to_job(dst);
  // An instant (one clock reading): the post copies at most an eager
  // message into a ring, or announces a larger one.
  if (TraceEvent* e = trace_->reserve()) {
    const std::uint64_t at = TraceBuffer::now();
    *e = TraceEvent{.begin = at,
                    .end = at,
                    .name = synchronous ? "ssend" : "send",
                    .label = "tag",
                    .value = tag,
                    .bytes = bytes.size(),
                    .rank = rank_,
                    .src = rank_,
                    .dst = to,
                    .context = g.context(),
                    .job = e->job,
                    .category = TraceCategory::message,
                    .has_bytes = true};
  }
  return worker_.endpoint().send(bytes, rank_, to, g.context(), tag, synchronous);
}

// --- tickets ---

// An unfinished send stays in its core's pool until the job ends: a completion
// may still arrive for it.
// A send not yet done may still be read by the receiver's core (the single
// copy). Unwinding past it would free its buffer under that copy: the job is
// cancelled and every worker stops reading first. A payload to another node
// may still be read by MPI (its MPI_Issend, which ob1 cannot cancel): the
// unwinding waits until the receiving node has taken it (a cancelled node
// takes in and drops what was sent to it). A ticket dropped without an
// exception is the same hazard, unseen: the caller goes on to reuse or free
// the buffer. It fails the job (naming the send) and is then made as safe.
template <>
void detail::Ticket<detail::SendState>::release() noexcept {
  if (!state_->done) {
    if (std::uncaught_exceptions() == 0) owner_->dropped_send(*state_);
    owner_->worker_.quiesce_before_unwinding();
    if (state_->over_network) owner_->worker_.finish_network_send(*state_);
  }
  if (state_->done) owner_->worker_.endpoint().release(state_);
}

void Process::dropped_send(const detail::SendState& s) noexcept {
  if (job_.cancelled.load(std::memory_order_acquire)) return;  // the job fails already, with its own error
  job_.fail(std::make_exception_ptr(InvalidArgument(
                "switchyard: rank " + std::to_string(rank_) + " let go of the ticket of its send to rank " +
                std::to_string(s.dst) + " (" + std::to_string(s.size) + " bytes, tag " + std::to_string(s.tag) +
                ") before the send completed, while the receiver may still read the payload: co_await the send, "
                "or p.wait(ticket), before the ticket goes")),
            rank_);
}

// A receive given up before its message came is withdrawn: a later message
// must neither be written into a buffer that may be gone nor vanish into it.
template <>
void detail::Ticket<detail::RecvState>::release() noexcept {
  detail::Endpoint& endpoint = owner_->worker_.endpoint();
  if (state_->done) {
    endpoint.release(state_);
  } else if (endpoint.withdraw(state_)) {
    // Posted but never matched: it takes no message back (free() counts it so).
    if (const detail::Group* g = owner_->job_.groups().find(state_->context)) {
      ++g->core(owner_->global_core_).traffic;
    }
    endpoint.release(state_);
  }
}

Rank RecvTicket::source() const {
  if (!done()) throw InvalidArgument("switchyard: RecvTicket::source before the receive completed");
  // Every receive asks (take_message): the world, which numbers as the job
  // does and is never freed, needs no look-up in the id table.
  if (state_->context == 0) return state_->sender;
  const detail::Group* g = owner_->job_.groups().find(state_->context);
  if (!g) throw InvalidArgument("switchyard: RecvTicket::source after its communicator was freed");
  return g->members().to_comm(state_->sender);
}
std::uint64_t RecvTicket::size() const {
  if (!done()) throw InvalidArgument("switchyard: RecvTicket::size before the receive completed");
  return state_->size;
}
Message RecvTicket::take_message() {
  if (!done()) throw InvalidArgument("switchyard: RecvTicket::take_message before the receive completed");
  return Message(source(), state_->tag, std::move(state_->payload));
}

}  // namespace switchyard
