#pragma once
/// @file
/// A software process: one rank of an SPMD job. It runs as a coroutine on the
/// worker of the core it was placed on and never leaves that core. Every runtime
/// call that may block is a Task to co_await; while a process waits, its core runs
/// other processes, and a process that waits for nothing at all costs no CPU.
///
/// Thread model: a Process and everything in it (wait state, its sends and
/// receives in its core's endpoint) is touched only by its own worker thread.
/// Other cores reach it only through the core-to-core rings, and through the
/// busy locks of its communicators.

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "switchyard/barrier_call.hpp"
#include "switchyard/busy_lock.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/message.hpp"
#include "switchyard/task.hpp"
#include "switchyard/transport/requests.hpp"

namespace switchyard {

class Process;
class Communicator;
/// The id under which an active-message handler is registered (RunOptions::handlers).
using HandlerId = std::uint32_t;
/// Runs on the destination's core, in the destination's context, as soon as the
/// destination's worker sees the message. It must not block; it may post replies.
/// `src` is the sender's rank in the communicator the message was posted on.
using ActiveMessageHandler = std::function<void(Process& self, Rank src, std::span<const std::byte> body)>;

namespace detail {
class Worker;
class Job;
class Group;
struct CoreCollective;
enum class CollectiveKind : std::int32_t;  // runtime/src/collective_kind.hpp
struct CompiledEngine;
class WatchAwaiter;
class TraceBuffer;
struct TraceEvent;
}  // namespace detail
class TraceSpan;

namespace detail {
// The number of the job whose processes this thread runs (Job::serial()), 0
// on a thread outside every job: a Communicator compares it with its own
// job's before it touches the job's state, which is gone once the job ends.
// Set by a worker for the whole job, and by Runtime::run while it calls the
// process bodies. constinit: no dynamic initialisation, so reading it is one
// thread-pointer-relative load, with no wrapper call.
extern thread_local constinit std::uint64_t running_job;
}  // namespace detail

namespace detail {
// A buffered send complete at once holds its endpoint's one shared state,
// which is never given back: its ticket goes without a call.
inline bool shares_complete_state(const SendState& s) noexcept { return s.id == kSharedCompleteSend; }
inline bool shares_complete_state(const RecvState&) noexcept { return false; }

// What SendTicket and RecvTicket share: each owns one request of its process's
// endpoint (State), is moved but never copied, and gives the request back
// when let go (release(), defined for each State in process.cpp).
template <class State>
class Ticket {
 public:
  Ticket(Ticket&& o) noexcept : state_(std::exchange(o.state_, nullptr)), owner_(o.owner_) {}
  Ticket& operator=(Ticket&& o) noexcept {
    if (this != &o) {
      let_go();
      state_ = std::exchange(o.state_, nullptr);
      owner_ = o.owner_;
    }
    return *this;
  }
  ~Ticket() { let_go(); }
  bool valid() const noexcept { return state_ != nullptr; }

 protected:
  Ticket() = default;
  Ticket(State* s, Process* owner) noexcept : state_(s), owner_(owner) {}
  void let_go() noexcept {
    if (state_ && !shares_complete_state(*state_)) release();
  }
  void release() noexcept;
  State* state_ = nullptr;
  Process* owner_ = nullptr;
};
template <>
void Ticket<SendState>::release() noexcept;
template <>
void Ticket<RecvState>::release() noexcept;
}  // namespace detail

/// A non-blocking send in flight. Complete once the payload may be reused: for an
/// eager send, when it is in the receiver's mailbox; for a single-copy send, when
/// the receiver has copied it. Keep the payload alive and unchanged until then,
/// and the ticket too: letting go of a ticket whose send is not complete (not
/// waited for, outside an exception) fails the job with an InvalidArgument
/// naming the rank, the destination and the tag, since the receiver may still
/// read the payload after the caller reused or freed it. It first stops every
/// core from reading, so the buffer may go.
class [[nodiscard]] SendTicket : public detail::Ticket<detail::SendState> {
 public:
  SendTicket() = default;

 private:
  friend class Process;
  SendTicket(detail::SendState* s, Process* owner) noexcept : Ticket(s, owner) {}
};

/// A non-blocking receive. Once complete: source(), size() and (for post_recv)
/// take_message(). A receive into a caller's buffer writes nothing else. A
/// ticket let go before its message came withdraws the receive.
class [[nodiscard]] RecvTicket : public detail::Ticket<detail::RecvState> {
 public:
  RecvTicket() = default;
  /// Whether the receive is complete (false for an empty ticket); never blocks.
  bool done() const noexcept { return state_ && state_->done; }
  /// The sender's rank in the receive's communicator, once complete.
  Rank source() const;
  /// The message's size in bytes, once complete.
  std::uint64_t size() const;
  /// The message of a complete post_recv, moved out of the ticket.
  Message take_message();

 private:
  friend class Process;
  RecvTicket(detail::RecvState* s, Process* owner) noexcept : Ticket(s, owner) {}
};

/// One software process of a job, as its body sees it: its rank and core, its
/// point-to-point calls, collectives and scheduling on the world communicator.
/// Made by Runtime::run; only its own worker thread touches it.
///
/// Cache-line aligned: processes of different cores are made one after the
/// other, and each one's fields are written by its core's worker; sharing a
/// line would make every wake-up a transfer between cores.
class alignas(kCacheLine) Process {
 public:
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  /// A job makes its processes one after another, n of them at once: from the
  /// frame cache (a pointer pop or bump), not one memalign each.
  static void* operator new(std::size_t size, std::align_val_t) {
    return detail::FrameCache::allocate_line_aligned(size);
  }
  /// Gives a process's memory back to the frame cache.
  static void operator delete(void* p, std::align_val_t) noexcept { detail::FrameCache::deallocate_line_aligned(p); }

  /// This process's rank in the job, 0 to size() - 1.
  Rank rank() const noexcept { return rank_; }
  /// The number of processes in the job, over every node.
  Rank size() const noexcept;
  int core() const noexcept;  ///< OS CPU number
  /// This node's index of the core (its worker), 0 to Runtime::cores().size() - 1,
  /// and how many of the job's processes that core runs: the processes of one
  /// core run one at a time, so what they share per core needs no atomics.
  std::uint32_t core_index() const noexcept;
  /// How many of the job's processes this process's core runs (see core_index()).
  std::uint32_t processes_on_core() const noexcept;
  /// The job's world communicator, as seen by this process. Every call below
  /// without a communicator is the same call on it.
  Communicator world() noexcept;

  class SendAwaiter;
  template <bool kIntoBuffer>
  class ReceiveAwaiter;
  using RecvAwaiter = ReceiveAwaiter<false>;  ///< what recv() returns: co_await yields the Message
  using RecvIntoAwaiter = ReceiveAwaiter<true>;  ///< what recv_into() returns: co_await yields the size
  class SendWaitAwaiter;
  class RecvWaitAwaiter;
  class YieldAwaiter;
  class SleepAwaiter;
  using Clock = std::chrono::steady_clock;  ///< the clock of sleep_until()

  // --- point to point. Tags below kFirstReservedTag are the caller's. ---
  // The blocking calls are awaitables without a coroutine frame of their own:
  // the message is posted when the call is made, and co_await waits for it.
  //
  // Progress while a process computes: whatever a send or receive call posts
  // reaches the peer's core before the call returns, not at this core's next
  // switch. A message (eager or single copy) to another core of this node
  // is in its ring, and the peer's core, if its process waits, takes it in
  // (a single copy straight out of the sender's buffer) while the sender
  // goes on computing; a receive that takes in a message that had arrived
  // (at post_recv*) answers the sender at once, so that the sender's wait for
  // a single-copy or synchronous send ends while the receiver computes. A
  // receive from one rank on another core of this node reads that rank's ring
  // itself when it is posted: a message lying there is taken in at once, with
  // no switch of this core since it came. What still needs this core: a
  // message that arrives after its receive was posted is taken in when this
  // process waits or yields (as an MPI rank progresses in MPI calls; a wait
  // with nothing else of its core to run polls the rings itself for a short
  // while before it parks, and an answer that comes meanwhile ends it
  // without a switch); a sender's ticket
  // completes when this process next looks; a packet that finds its ring
  // full leaves as room appears, at the latest when this core next switches.
  // Towards another node, packets go as the network transport sends them
  // (network_transport.hpp).
  /// Sends `bytes` to rank `dst` with `tag`; co_await returns once the payload
  /// may be reused (as a SendTicket completes).
  SendAwaiter send(Rank dst, std::span<const std::byte> bytes, Tag tag = 0);
  RecvAwaiter recv(Rank src, Tag tag = 0);  ///< src may be kAnySource; yields a Message
  /// Receives straight into `buffer`; yields the message size. A message larger
  /// than the buffer is an InvalidArgument error.
  RecvIntoAwaiter recv_into(Rank src, std::span<std::byte> buffer, Tag tag = 0);

  /// Posts a send of `bytes` to `dst` and returns at once; see SendTicket for
  /// when it completes and how long the payload must stay.
  [[nodiscard]] SendTicket post_send(Rank dst, std::span<const std::byte> bytes, Tag tag = 0);
  /// Synchronous send (MPI_Ssend): complete only once the receiver has taken the
  /// message in, whatever its size. DRS_N releases a receiver's busy lock on it.
  [[nodiscard]] SendTicket post_ssend(Rank dst, std::span<const std::byte> bytes, Tag tag = 0);
  /// A synchronous send (as post_ssend), awaited.
  SendAwaiter ssend(Rank dst, std::span<const std::byte> bytes, Tag tag = 0);
  /// Posts a receive of a message from `src` (or kAnySource) with `tag` and
  /// returns at once; the message is the ticket's once complete.
  [[nodiscard]] RecvTicket post_recv(Rank src, Tag tag = 0);
  /// Posts a receive straight into `buffer`, which must stay alive until it
  /// completes; a larger message is an InvalidArgument.
  [[nodiscard]] RecvTicket post_recv_into(Rank src, std::span<std::byte> buffer, Tag tag = 0);
  /// True once complete; never blocks.
  bool test(SendTicket& t) { return state_of(t).done; }
  /// True once complete; never blocks. A message larger than the receive's buffer is an InvalidArgument.
  bool test(RecvTicket& t) {
    const detail::RecvState& r = state_of(t);
    check_truncation(r);
    return r.done;
  }
  /// Waits until the send is complete.
  SendWaitAwaiter wait(SendTicket& t);
  /// Waits until the receive is complete; a message larger than its buffer is an InvalidArgument.
  RecvWaitAwaiter wait(RecvTicket& t);
  /// Waits for every ticket; empty tickets are skipped.
  Task<void> wait_all(std::span<SendTicket> tickets);
  /// Waits for every ticket; empty tickets are skipped.
  Task<void> wait_all(std::span<RecvTicket> tickets);
  /// Waits until one ticket is complete and returns the lowest index of a
  /// complete one; empty tickets are skipped; tickets.size() if all are empty.
  Task<std::size_t> wait_any(std::span<SendTicket> tickets);
  /// Waits until one ticket is complete and returns the lowest index of a
  /// complete one; empty tickets are skipped; tickets.size() if all are empty.
  Task<std::size_t> wait_any(std::span<RecvTicket> tickets);

  // --- active messages ---
  /// Runs handler `handler` with `body` on `dst`'s core (ActiveMessageHandler);
  /// never waits: a full ring sends it once room appears.
  void post_active(Rank dst, HandlerId handler, std::span<const std::byte> body);
  /// The same, waiting for ring room if the ring to `dst`'s core is full.
  Task<void> send_active(Rank dst, HandlerId handler, std::span<const std::byte> body);

  // --- the receivers' busy locks (one per process, shared by all) ---
  // As the Communicator calls of the same names, on the world communicator.
  class BusyLockAwaiter;
  /// Tries the busy lock of rank `r` (Communicator::try_busy_lock).
  BusyLockAwaiter try_busy_lock(Rank r);
  /// Gives back the busy lock of rank `r` that this process holds (Communicator::release_busy_lock).
  void release_busy_lock(Rank r);
  /// The busy lock of rank `r` of this node (Communicator::busy_lock).
  BusyLock& busy_lock(Rank r);

  // --- collectives: every process of the job calls them in the same order ---
  /// Returns once every process of the job has called it (BarrierCall).
  BarrierCall barrier();
  /// The papers' concatenate: every process's bytes, in rank order.
  Task<std::vector<std::byte>> allgather(std::span<const std::byte> mine);
  /// allgather of one trivially copyable value per process: every process's `mine`, in rank order.
  template <class T>
  Task<std::vector<T>> allgather_value(const T& mine);
  /// The papers' parallel vector sum: element-wise sum over all processes. Every
  /// process passes a vector of the same length.
  Task<std::vector<std::int64_t>> allreduce(std::span<const std::int64_t> mine);
  /// Element-wise sum of the vectors of all lower ranks (rank 0 gets zeros).
  Task<std::vector<std::int64_t>> exclusive_scan(std::span<const std::int64_t> mine);
  /// The root's bytes, on every process. Non-roots' `bytes` are ignored.
  Task<std::vector<std::byte>> broadcast(Rank root, std::span<const std::byte> bytes);

  // --- scheduling ---
  /// Lets the other processes of this core run, then continues.
  YieldAwaiter yield();
  /// Waits until pred() holds. pred is re-evaluated whenever something happens to
  /// this process: a message arrives for it or an active-message handler runs in it.
  template <class Pred>
  Task<void> wait_until(Pred pred, const char* what = "a condition");
  /// Waits until `deadline` (at once if it has passed), costing no CPU
  /// meanwhile: the process sits in its core's timer heap, and a core with
  /// nothing else to do sleeps in the kernel until the earliest deadline.
  /// Messages that arrive meanwhile wait for it; cancellation wakes it.
  SleepAwaiter sleep_until(Clock::time_point deadline);
  /// Waits for the duration `d`, as sleep_until(now + d).
  template <class Rep, class Period>
  SleepAwaiter sleep_for(std::chrono::duration<Rep, Period> d);

 private:
  friend class detail::Worker;
  friend class detail::Job;
  friend class Communicator;
  template <class State>
  friend class detail::Ticket;
  friend class RecvTicket;
  friend class TraceSpan;
  friend struct detail::CompiledEngine;
  friend class detail::WatchAwaiter;
  friend class BarrierCall;
  struct ParkAwaiter;
  /// A member, not a friend: the awaiters' common base reaches suspend_until as they do.
  class FlagAwaiterBase;
  /// The call a process is inside, for the stall report: "a barrier (a
  /// collective)" on communicator `context`.
  struct Activity {
    const char* what = nullptr;
    ContextId context = 0;
  };
  /// Sets the process's activity for its own lifetime (a collective's or a
  /// compiled run's frame), then gives the enclosing call's back.
  class ActivityScope {
   public:
    ActivityScope(Process& p, const char* what, ContextId context) noexcept : process_(p), outer_(p.activity_) {
      p.activity_ = Activity{what, context};
    }
    ~ActivityScope() { process_.activity_ = outer_; }
    ActivityScope(const ActivityScope&) = delete;
    ActivityScope& operator=(const ActivityScope&) = delete;

   private:
    Process& process_;
    Activity outer_;
  };

  Process(detail::Job& job, detail::Worker& worker, Rank rank);

  /// Throws JobCancelled once the process's core has seen the job cancelled.
  /// Inline, one load: it stands on the path of every message, twice.
  void check_cancelled() const {
    if (*cancel_seen_) [[unlikely]]
      throw_cancelled();
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_cancelled();
  void check_rank(const detail::Group& g, Rank r, const char* what) const;
  [[noreturn, gnu::cold, gnu::noinline]] void bad_rank(const detail::Group& g, Rank r, const char* what) const;
  void check_user_tag(Tag t, const char* what) const {
    if (t >= kFirstReservedTag) [[unlikely]]
      reserved_tag(t, what);
  }
  /// The world communicator's group, as world().group() checks it: this
  /// process's job is the one its thread runs.
  const detail::Group& world_group() const {
    if (job_serial_ != detail::running_job || !world_) [[unlikely]]
      not_in_its_job();
    return *world_;
  }
  /// Throws what world().group() throws outside the process's job.
  [[noreturn, gnu::cold, gnu::noinline]] void not_in_its_job() const;
  [[noreturn, gnu::cold, gnu::noinline]] void reserved_tag(Tag t, const char* what) const;
  void check_message_size(std::size_t bytes, const char* what) const;
  [[noreturn, gnu::cold, gnu::noinline]] void message_too_large(std::size_t bytes, const char* what) const;
  ParkAwaiter park(const char* what, Rank peer = kAnySource);
  /// About to park on `flag`: when nothing else of its core can run, polls
  /// the core's rings itself for a short, bounded while (Worker::poll_before_parking),
  /// so that an answer a cache line's transfer away goes on without a switch.
  /// Whether `flag` is set.
  bool poll_before_parking(const bool& flag) noexcept;
  /// Parks until *flag is true (or the job is cancelled).
  void suspend_until(std::coroutine_handle<> h, const bool* flag, const char* what, Rank peer) noexcept {
    wake_when_ = flag;
    waiting_for_ = what;
    waiting_peer_ = peer;
    resume_point_ = h;
    parked_ = true;
    if (trace_) [[unlikely]]
      trace_wait_begin("wait");
  }
  /// Parks until *flag is true inside `call`, a call without a frame of its
  /// own (a barrier's, a compiled run's): the stall report names it as the
  /// call the process is in. left_call() once resumed.
  void suspend_in(std::coroutine_handle<> h, const bool* flag, const char* what, Activity call) noexcept {
    parked_in_ = call;
    suspend_until(h, flag, what, kAnySource);
  }
  /// Back from suspend_in(): the call is the enclosing activity's again.
  void left_call() const noexcept { parked_in_.what = nullptr; }
  /// Back on the core after a park. The rare cases (a wait span to close, a
  /// job cancelled meanwhile) are one test, out of line: the resumed path
  /// then makes no call that returns, and saves no registers for one.
  void resumed() const {
    waiting_for_ = nullptr;
    wake_when_ = nullptr;
    if (wait_event_ || *cancel_seen_) [[unlikely]]
      resumed_traced_or_cancelled();
  }
  /// resumed()'s rare cases: closes the wait's trace span, then throws JobCancelled if the job is being cancelled.
  [[gnu::cold, gnu::noinline]] void resumed_traced_or_cancelled() const;
  /// Something happened to this process: if it is parked and what it waits for
  /// may now hold, it is put back in its core's ready queue.
  void notify() {
    if (may_go_on()) wake();
  }
  /// Whether it is parked and what it waits for may now hold (notify()'s test).
  bool may_go_on() const noexcept { return parked_ && (!wake_when_ || *wake_when_); }
  void wake();  ///< unconditionally, if parked
  const detail::SendState& state_of(const SendTicket& t) const {
    if (!t.state_) [[unlikely]]
      empty_ticket("send");
    return *t.state_;
  }
  detail::RecvState& state_of(RecvTicket& t) const {
    if (!t.state_) [[unlikely]]
      empty_ticket("receive");
    return *t.state_;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void empty_ticket(const char* kind) const;
  /// A SendTicket let go of before its send completed, outside an exception: fails the job.
  [[gnu::cold, gnu::noinline]] void dropped_send(const detail::SendState& s) noexcept;
  /// Parks in the worker's timer heap until `deadline`.
  void sleep_in_heap(std::coroutine_handle<> h, Clock::time_point deadline) noexcept;
  /// Called by the worker when this process's deadline has come.
  void timer_expired() {
    if (parked_ && wake_when_ == &timer_expired_) {
      timer_expired_ = true;
      wake();
    }
  }
  /// Ranks are the group's; tags are checked by the public callers. The
  /// ticket is made here, inline, from the request the endpoint returns in a
  /// register: returned whole from a call, it went through memory as two
  /// stores read back as one wide load, which the store buffer cannot forward.
  SendTicket post_send_on(const detail::Group& g, Rank dst, std::span<const std::byte> bytes, Tag tag,
                          bool synchronous) {
    return SendTicket(post_send_request(g, dst, bytes, tag, synchronous), this);
  }
  RecvTicket post_recv_on(const detail::Group& g, Rank src, Tag tag, std::span<std::byte> target, bool has_target) {
    return RecvTicket(post_recv_request(g, src, tag, target, has_target), this);
  }
  /// What post_send_on() and post_recv_on() post: the request, for the ticket to own.
  detail::SendState* post_send_request(const detail::Group& g, Rank dst, std::span<const std::byte> bytes, Tag tag,
                                       bool synchronous);
  detail::RecvState* post_recv_request(const detail::Group& g, Rank src, Tag tag, std::span<std::byte> target,
                                       bool has_target);
  /// nullptr once the message is on its way, else a send that completes when a full ring has room.
  detail::SendState* post_active_on(const detail::Group& g, Rank dst, HandlerId handler,
                                    std::span<const std::byte> body);
  Task<void> send_active_on(const detail::Group& g, Rank dst, HandlerId handler, std::span<const std::byte> body);
  BusyLockAwaiter try_busy_lock_on(const detail::Group& g, Rank r);
  void release_busy_lock_on(const detail::Group& g, Rank r);
  /// Whether job rank r lives on this node (its busy lock is this node's to arbitrate).
  bool on_this_node(Rank job_rank) const noexcept;
  void check_truncation(const detail::RecvState& r) const {
    if (r.truncated) [[unlikely]]
      truncated(r);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void truncated(const detail::RecvState& r) const;
  /// Tracing (trace.cpp): a blocked stretch of this process, and a send with its post timed.
  [[gnu::noinline]] void trace_wait_begin(const char* name) const noexcept;
  [[gnu::noinline]] void trace_wait_end() const noexcept;
  [[gnu::noinline]] detail::SendState* traced_send(const detail::Group& g, Rank dst, std::span<const std::byte> bytes,
                                                   Tag tag, bool synchronous);

  /// A collective call of one core is complete, and this process, one of its
  /// members, completes it: the others, parked on it, go back to the ready queue.
  void release_core(detail::CoreCollective& slot, const std::vector<Process*>& local);
  /// A barrier's step 3 on a communicator within one node: the core's
  /// leader, having rung the other cores, waits for each of them to reach
  /// call `seq` (Group::reached), with no message.
  Task<void> reach_other_cores(const detail::Group& g, detail::CollectiveKind kind, std::uint64_t seq);
  /// Appends a stamp of the call (kind, root) to a non-empty blob, checked by the receivers.
  Task<void> between_cores(const detail::Group& g, detail::CoreCollective& slot, detail::CollectiveKind kind,
                           std::uint64_t seq, Rank root, std::uint32_t root_worker, std::vector<std::byte>& blob);
  /// split: allgather_split's, for that kind only. Result: the member's copy
  /// of the result (std::vector<std::byte>), or void where there is none to
  /// hand back (a barrier: the caller's task is then this one, not a frame
  /// around it).
  template <class Result>
  Task<Result> collective(const detail::Group& g, Rank me, detail::CollectiveKind kind, std::span<const std::byte> mine,
                          Rank root,
                          const std::function<void(std::span<const std::byte>, std::span<const Rank>,
                                                   std::span<std::vector<std::byte>>)>* split = nullptr);

  detail::Job& job_;
  detail::Worker& worker_;
  const bool* cancel_seen_;  ///< the worker's: whether its core has seen the job cancelled (check_cancelled)
  Rank rank_;
  /// Its core as the job numbers every node's cores (RouteTable::global_core):
  /// where its communicators keep its core's collective slots and counts.
  std::uint32_t global_core_;
  std::uint64_t job_serial_;  ///< job_.serial(), kept here for the Communicators made from this process
  const detail::Group* world_ = nullptr;  ///< the job's world communicator, set once the job has made it

  // All below: written only by this process's worker thread. What a park and
  // a resume touch lies on this line and the one above (trace_ and
  // wait_event_ included: every park and resume tests them).
  std::coroutine_handle<> resume_point_;  ///< where to continue when resumed
  Task<void> main_;
  bool parked_ = false;
  bool started_ = false;
  bool finished_ = false;
  bool timer_expired_ = false;  ///< the flag a sleeper parks on: only its deadline sets it
  mutable const char* waiting_for_ = nullptr;  ///< for the stall diagnostic
  mutable Rank waiting_peer_ = kAnySource;
  mutable const bool* wake_when_ = nullptr;  ///< parked on one completion flag: other events need not wake it
  /// This core's buffer when the job records a trace, else nullptr: set once, before the job starts.
  detail::TraceBuffer* trace_ = nullptr;
  mutable detail::TraceEvent* wait_event_ = nullptr;  ///< the open wait or yield span, if any
  /// Parked in a call without a frame (suspend_in): that call, which the stall
  /// report names rather than activity_; what == nullptr otherwise. Two stores
  /// to park, where saving and giving back activity_ took four and two loads.
  mutable Activity parked_in_;
  Activity activity_;  ///< for the stall diagnostic: see ActivityScope
  std::uint64_t run_began_ = 0;  ///< traced: when the body was first resumed
};
static_assert(kOwnsCacheLines<Process>, "shared across cores: cache lines of its own");

/// Parks the process until something wakes it (park()): the step of wait_until().
struct Process::ParkAwaiter {
  Process& process;  ///< the process that parks
  /// Never ready: awaiting it always parks.
  bool await_ready() const noexcept { return false; }
  /// Parks the process, to be resumed at `h`.
  void await_suspend(std::coroutine_handle<> h) noexcept {
    process.resume_point_ = h;
    process.parked_ = true;
    if (process.trace_) [[unlikely]]
      process.trace_wait_begin("wait");
  }
  /// Back on the core; throws JobCancelled if the job is being cancelled.
  void await_resume() const { process.resumed(); }
};

/// Waits for one completion flag of the process; the common shape of the awaiters below.
class Process::FlagAwaiterBase {
 public:
  /// Parks the process, to be resumed at `h`, until the flag is set; or, when
  /// it is the only process its core could run, first polls the core's rings
  /// itself for a short while (Process::poll_before_parking) and goes on at
  /// once (false) if that set the flag.
  bool await_suspend(std::coroutine_handle<> h) noexcept {
    if (process_.poll_before_parking(*flag_)) return false;
    process_.suspend_until(h, flag_, what_, peer_);
    return true;
  }

 protected:
  /// Waits for `*flag`; `what` and `peer` say what for in the stall report.
  FlagAwaiterBase(Process& p, const bool* flag, const char* what, Rank peer)
      : process_(p), flag_(flag), what_(what), peer_(peer) {}
  /// Whether the flag is set.
  bool ready() const noexcept { return *flag_; }
  Process& process_;  ///< the waiting process
  const bool* flag_;  ///< the completion flag, set by the process's own worker
  const char* what_;  ///< what it waits for, in the stall report's words
  Rank peer_;  ///< on whom it waits, for the stall report
};

/// What send() and ssend() return: co_await waits until the send is complete.
/// It holds the send's ticket.
class [[nodiscard]] Process::SendAwaiter : FlagAwaiterBase {
 public:
  /// Waits for the send of ticket `t`, which it takes over.
  SendAwaiter(Process& p, SendTicket t)
      : FlagAwaiterBase(p, &p.state_of(t).done, "completion of its send to", p.state_of(t).dst),
        ticket_(std::move(t)) {}
  /// Whether the send is complete already.
  bool await_ready() const noexcept { return ready(); }
  using FlagAwaiterBase::await_suspend;
  /// Back on the core; throws JobCancelled if the job is being cancelled.
  void await_resume() const { process_.resumed(); }

 private:
  SendTicket ticket_;
};

/// recv() yields the Message; recv_into() yields the size, the payload being in the caller's buffer.
template <bool kIntoBuffer>
class [[nodiscard]] Process::ReceiveAwaiter : FlagAwaiterBase {
 public:
  /// Waits for the receive of ticket `t` (from `src`, for the stall report), which it takes over.
  ReceiveAwaiter(Process& p, RecvTicket t, Rank src)
      : FlagAwaiterBase(p, &p.state_of(t).done, kIntoBuffer ? "a message (recv_into) from" : "a message (recv) from",
                        src),
        ticket_(std::move(t)) {}
  /// Whether the message is in already.
  bool await_ready() const noexcept { return ready(); }
  using FlagAwaiterBase::await_suspend;
  /// The Message, or for recv_into() its size; InvalidArgument if it did not fit the buffer.
  auto await_resume() {
    process_.resumed();
    process_.check_truncation(process_.state_of(ticket_));
    if constexpr (kIntoBuffer) {
      return ticket_.size();
    } else {
      return ticket_.take_message();
    }
  }

 private:
  RecvTicket ticket_;
};

/// What wait(SendTicket&) returns: co_await waits until the send is complete.
class [[nodiscard]] Process::SendWaitAwaiter : FlagAwaiterBase {
 public:
  /// Waits for the send of `t`, which stays the caller's and must outlive the wait.
  SendWaitAwaiter(Process& p, const SendTicket& t)
      : FlagAwaiterBase(p, &p.state_of(t).done, "completion of its send to", p.state_of(t).dst) {}
  /// Whether the send is complete already.
  bool await_ready() const noexcept { return ready(); }
  using FlagAwaiterBase::await_suspend;
  /// Back on the core; throws JobCancelled if the job is being cancelled.
  void await_resume() const { process_.resumed(); }
};

/// What wait(RecvTicket&) returns: co_await waits until the receive is complete.
class [[nodiscard]] Process::RecvWaitAwaiter : FlagAwaiterBase {
 public:
  /// Waits for the receive of `t`, which stays the caller's and must outlive
  /// the wait. what: the wait in the stall report's words, followed by the sender's rank.
  RecvWaitAwaiter(Process& p, RecvTicket& t, const char* what = "a message (recv) from")
      : FlagAwaiterBase(p, &p.state_of(t).done, what, p.state_of(t).src), state_(p.state_of(t)) {}
  /// Whether the message is in already.
  bool await_ready() const noexcept { return ready(); }
  using FlagAwaiterBase::await_suspend;
  /// Back on the core; InvalidArgument if the message did not fit the receive's buffer.
  void await_resume() const {
    process_.resumed();
    process_.check_truncation(state_);
  }

 private:
  detail::RecvState& state_;
};

/// co_await yields whether the busy lock is now this process's. A lock of this
/// node is tried when the call is made; another node's is asked for then, and
/// the process waits for the answer.
class [[nodiscard]] Process::BusyLockAwaiter {
 public:
  /// For the runtime: the answer `granted` already (request nullptr), or the
  /// request to `peer`'s node still to be answered.
  BusyLockAwaiter(Process& p, detail::SendState* request, Rank peer, bool granted) noexcept
      : process_(p), request_(request), peer_(peer), granted_(granted) {}
  BusyLockAwaiter(const BusyLockAwaiter&) = delete;
  BusyLockAwaiter& operator=(const BusyLockAwaiter&) = delete;
  ~BusyLockAwaiter();
  /// Whether the answer is here already (always, for a lock of this node).
  bool await_ready() const noexcept { return !request_ || request_->done; }
  /// Parks the process, to be resumed at `h`, until the answer comes.
  void await_suspend(std::coroutine_handle<> h) noexcept {
    process_.suspend_until(h, &request_->done, "the answer about the busy lock of", peer_);
  }
  /// Whether the lock is now this process's.
  bool await_resume();

 private:
  Process& process_;
  detail::SendState* request_;  ///< nullptr: answered on this node, in granted_
  Rank peer_;  ///< the lock's process (job rank), for the stall diagnostic
  bool granted_;
};

/// What yield() returns: co_await lets the core's other ready processes run first.
class [[nodiscard]] Process::YieldAwaiter {
 public:
  /// A yield of `p`.
  explicit YieldAwaiter(Process& p) : process_(p) {}
  /// Never ready: awaiting it always yields.
  bool await_ready() const noexcept { return false; }
  /// Puts the process back in its core's ready queue, to be resumed at `h`.
  void await_suspend(std::coroutine_handle<> h) noexcept;
  /// Back on the core; throws JobCancelled if the job is being cancelled.
  void await_resume() const {
    if (process_.wait_event_) [[unlikely]]
      process_.trace_wait_end();
    process_.check_cancelled();
  }

 private:
  Process& process_;
};

/// What sleep_until() and sleep_for() return: co_await waits until the deadline.
class [[nodiscard]] Process::SleepAwaiter {
 public:
  /// A sleep of `p` until `deadline`.
  SleepAwaiter(Process& p, Clock::time_point deadline) : process_(p), deadline_(deadline) {}
  /// Whether the deadline has passed already.
  bool await_ready() const noexcept { return deadline_ <= Clock::now(); }
  /// Parks the process in its core's timer heap, to be resumed at `h`.
  void await_suspend(std::coroutine_handle<> h) noexcept { process_.sleep_in_heap(h, deadline_); }
  /// Back on the core; throws JobCancelled if the job is being cancelled.
  void await_resume() const { process_.resumed(); }

 private:
  Process& process_;
  Clock::time_point deadline_;
};

inline Process::SleepAwaiter Process::sleep_until(Clock::time_point deadline) {
  check_cancelled();
  return SleepAwaiter(*this, deadline);
}
/// A duration past the clock's range (hours::max(), 1e300 s, infinity) sleeps
/// until Clock::time_point::max(), which only cancellation ends: now + d would
/// overflow and, wrapped negative, return at once. NaN is refused.
template <class Rep, class Period>
Process::SleepAwaiter Process::sleep_for(std::chrono::duration<Rep, Period> d) {
  if constexpr (std::is_floating_point_v<Rep>) {
    if (d.count() != d.count()) throw InvalidArgument("switchyard: sleep_for: the duration is NaN");
  }
  const Clock::time_point now = Clock::now();
  // Compared in long double seconds: converting d to the clock's ticks is what overflows.
  const long double room = std::chrono::duration<long double>(Clock::time_point::max() - now).count();
  if (std::chrono::duration<long double>(d).count() >= room) return sleep_until(Clock::time_point::max());
  if (d <= d.zero()) return sleep_until(now);
  return sleep_until(now + std::chrono::ceil<Clock::duration>(d));
}

// The world communicator's calls, without a Communicator (communicator.hpp
// makes them the same calls on one): on the path of every message, inline.
inline SendTicket Process::post_send(Rank dst, std::span<const std::byte> bytes, Tag tag) {
  check_user_tag(tag, "send");
  return post_send_on(world_group(), dst, bytes, tag, false);
}
inline SendTicket Process::post_ssend(Rank dst, std::span<const std::byte> bytes, Tag tag) {
  check_user_tag(tag, "ssend");
  return post_send_on(world_group(), dst, bytes, tag, true);
}
inline RecvTicket Process::post_recv(Rank src, Tag tag) {
  check_user_tag(tag, "recv");
  return post_recv_on(world_group(), src, tag, {}, false);
}
inline RecvTicket Process::post_recv_into(Rank src, std::span<std::byte> buffer, Tag tag) {
  check_user_tag(tag, "recv_into");
  return post_recv_on(world_group(), src, tag, buffer, true);
}

inline Process::SendAwaiter Process::send(Rank dst, std::span<const std::byte> bytes, Tag tag) {
  return SendAwaiter(*this, post_send(dst, bytes, tag));
}
inline Process::SendAwaiter Process::ssend(Rank dst, std::span<const std::byte> bytes, Tag tag) {
  return SendAwaiter(*this, post_ssend(dst, bytes, tag));
}
inline Process::RecvAwaiter Process::recv(Rank src, Tag tag) { return RecvAwaiter(*this, post_recv(src, tag), src); }
inline Process::RecvIntoAwaiter Process::recv_into(Rank src, std::span<std::byte> buffer, Tag tag) {
  return RecvIntoAwaiter(*this, post_recv_into(src, buffer, tag), src);
}
inline Process::SendWaitAwaiter Process::wait(SendTicket& t) { return SendWaitAwaiter(*this, t); }
inline Process::RecvWaitAwaiter Process::wait(RecvTicket& t) { return RecvWaitAwaiter(*this, t); }
inline BarrierCall Process::barrier() { return BarrierCall(*this, world_group(), rank_); }
inline Process::YieldAwaiter Process::yield() {
  check_cancelled();
  return YieldAwaiter(*this);
}

template <class T>
Task<std::vector<T>> Process::allgather_value(const T& mine) {
  static_assert(std::is_trivially_copyable_v<T>, "allgather_value needs a trivially copyable type");
  // By value: the task is lazy, and `mine` may be gone by the time it is
  // awaited (a task stored, then awaited after its argument's full-expression).
  return [](Process& p, T value) -> Task<std::vector<T>> {
    auto bytes = co_await p.allgather(std::as_bytes(std::span<const T, 1>(&value, 1)));
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    co_return out;
  }(*this, mine);
}

template <class Pred>
Task<void> Process::wait_until(Pred pred, const char* what) {
  check_cancelled();
  while (!pred()) co_await park(what);
}

}  // namespace switchyard
