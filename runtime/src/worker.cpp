#include "worker.hpp"

#include <algorithm>
#include <cstring>

#include "job.hpp"

namespace switchyard::detail {

namespace {
constexpr auto kIdleSleep = std::chrono::milliseconds(100);
constexpr auto kBacklogSleep = std::chrono::microseconds(50);  // a full ring: its reader drains it soon
// In a job across nodes nothing rings a worker's doorbell when a packet comes
// from another node (MPI has no doorbell to ring): an idle worker polls MPI
// at least this often. Only after spinning and yielding first (Backoff's
// kSpinFor and kYieldFor), so a conversation in progress never waits for it.
constexpr auto kNetworkIdleSleep = std::chrono::milliseconds(1);
// Resumes of processes made ready during a round that the round may add:
// bounds how long arrivals from other cores wait for the next poll.
constexpr std::size_t kExtraResumes = 64;
// A worker whose next event is a deadline sleeps in the kernel until this long
// before it and spins the rest: a futex timeout wakes tens of microseconds
// late on a loaded or virtual machine, and this costs at most this much CPU
// per deadline.
constexpr auto kTimerSpin = std::chrono::microseconds(50);
}  // namespace

Worker::Worker(WorkerThread& thread) : thread_(thread), index_(thread.index()), os_core_(thread.os_core()) {}

Worker::~Worker() = default;

void Worker::start(Job* job) {
  job_ = job;
  thread_.start(*this);
}

bool Worker::has_pending_work() {
  if (job_->remaining.load(std::memory_order_acquire) == 0 && (cancel_seen_ || job_->active_messages_run())) {
    return !network_job_ || job_->network()->finished();  // see NetworkTransport::end_job()
  }
  if (!cancel_seen_ && job_->cancelled.load(std::memory_order_acquire)) return true;
  if (!cancel_seen_ && !timers_.empty() && timers_.earliest() <= TimerHeap::Clock::now()) return true;
  if (cancel_seen_ && !cancel_released_ && job_->quiesced.load(std::memory_order_acquire) == job_->worker_count()) {
    return true;
  }
  return endpoint_.has_arrivals() || watch_satisfied();
}

const std::vector<Process*>& Worker::local_processes() const { return job_->local_processes(index_); }

void Worker::enter_job() {
  Job& job = *job_;
  cancel_seen_ = cancel_released_ = quiet_ = false;
  resumes_ = 0;
  kernel_calls_before_ = thread_.kernel_calls();
  trace_ = job.trace_buffer(index_);
  transport_.attach(job.rings(), index_);
  network_job_ = job.network() != nullptr;
  if (network_job_) {
    if (!network_) network_ = job.network_session()->make_transport();
    network_->attach(*job.network(), job.routes(), index_, job.rings().capacity_slots(), endpoint_);
  }
  endpoint_.start(EndpointConfig{.routes = &job.routes(),
                                 .node = job.node(),
                                 .core = index_,
                                 .cores = job.worker_count(),
                                 .local_ranks = static_cast<std::uint32_t>(local_processes().size()),
                                 .eager_limit = job.options().eager_limit,
                                 .network_eager_limit = job.options().network_eager_limit,
                                 .transport = &transport_,
                                 .network = network_job_ ? network_.get() : nullptr,
                                 .client = this,
                                 .trace_clock = trace_ ? &TraceBuffer::now : nullptr});
  ready_.reset(local_processes().size());
  timers_.reset(local_processes().size());
  watches_.reserve(local_processes().size());
  live_ = local_processes().size();
  for (Process* p : local_processes()) {
    p->resume_point_ = p->main_.handle();
    ready_.push(p);
  }
}

Worker::Turn Worker::turn() {
  Job& job = *job_;
  running_job = job.serial();  // the thread runs several jobs' turns: this one's communicators are valid
  const bool took_in = endpoint_.poll();
  bool worked = took_in;
  if (!deferred_active_.empty()) [[unlikely]]
    worked |= run_deferred_active();
  if (!watches_.empty()) worked |= poll_watches();
  if (!cancel_released_ && job.cancelled.load(std::memory_order_acquire)) worked |= handle_cancel();
  if (!cancel_seen_ && !timers_.empty()) expire_timers();  // a cancelled job wakes every sleeper itself
  const bool may_resume = !cancel_seen_ || cancel_released_;
  const bool resumed = may_resume && !ready_.empty();
  if (resumed) round();
  const bool sent = endpoint_.flush();
  worked |= sent;
  const bool finished = job.remaining.load(std::memory_order_acquire) == 0;
  // While a process is not finished: once all are, packets are only handlers
  // posting to each other, and a job they keep going for a whole timeout is stalled.
  if ((took_in || sent) && !finished) note_packets_moved();
  // A job across nodes ends on every node at once (NetworkTransport::end_job).
  if (finished && (cancel_seen_ || job.active_messages_run()) && (!network_job_ || network_->end_job())) {
    return Turn::kOver;
  }
  if (resumed || worked) {
    quiet_ = !worked;
    return Turn::kBusy;
  }
  return Turn::kIdle;
}

// Spinning pays when a message is likely on its way: right after this core
// sent or received some. It does not when every process of this core
// sleeps (nothing here waits for a message), nor after a turn in which
// sleepers woke and went back to sleep without a word: spinning then would
// only burn the core (and, on a busy machine, cost this thread its place
// in the kernel's queue right when the next deadline comes).
bool Worker::spin_pays() const noexcept {
  const bool all_asleep = timers_.size() == live_ && !endpoint_.has_backlog();
  return timers_.empty() || !(all_asleep || quiet_);
}

bool Worker::may_have_work() const noexcept {
  const Job& job = *job_;
  // Relaxed: a hint; the turn that follows loads them as it always does.
  return network_job_ || !timers_.empty() || !ready_.empty() || !deferred_active_.empty() || endpoint_.has_arrivals() ||
         endpoint_.has_staged() || endpoint_.has_backlog() || endpoint_.has_waiting_sends() || watch_satisfied() ||
         job.cancelled.load(std::memory_order_relaxed) || job.remaining.load(std::memory_order_relaxed) == 0;
}

void Worker::add_timer(TimerHeap::Clock::time_point deadline, Process* p) {
  timers_.push(deadline, p);
  // Single writer; see sleepers().
  published_.sleepers.store(static_cast<std::uint32_t>(timers_.size()), std::memory_order_relaxed);
}

void Worker::expire_timers() {
  const std::size_t before = timers_.size();
  timers_.expire_until(TimerHeap::Clock::now(), [](Process* p) { p->timer_expired(); });
  // Single writer; see sleepers().
  if (timers_.size() != before) {
    published_.sleepers.store(static_cast<std::uint32_t>(timers_.size()), std::memory_order_relaxed);
  }
}

// The process's own poll replaces, for an answer that comes within the
// bound, the trip through the worker's loop: park, end of the round, flush,
// the loop's peeks, a turn, the ready queue and a resume. It runs only where
// the worker would have spun on this core anyway: no other process of the
// core ready, no timer, watch or deferred handler, nothing staged or waiting
// for room, one job on the thread, not cancelled, traced or across nodes.
// Bounded by kSelfPollChecks checks (a few microseconds back to back, then a
// pause between checks: tens of microseconds in all, less than the worker's
// own spin), after which the process parks as before.
bool Worker::poll_alone(const bool& flag) noexcept {
  if (!alone_with_rings()) return false;
  for (std::uint32_t check = 0; check < kSelfPollChecks; ++check) {
    if (endpoint_.has_arrivals()) {
      // The awaited ring first, up to the awaited packet: a burst's later
      // messages stay there for the process's next receives, each taken in
      // with one copy rather than queued in an envelope and copied again.
      if (endpoint_.deliver_awaited(flag)) return true;
      endpoint_.poll();
      if (flag) return true;
      if (!ready_.empty() || !alone_with_rings()) return false;
    } else if (check >= Backoff::kChecksWithoutPause) {
      cpu_relax();
    }
    // Relaxed: a hint; the worker's turn loads it with acquire once the process parks.
    if (job_->cancelled.load(std::memory_order_relaxed)) return false;
  }
  return false;
}

bool Worker::keep_waiting_alone(std::uint32_t check) const noexcept {
  // Relaxed: a hint, as in poll_alone.
  if (endpoint_.has_arrivals() || job_->cancelled.load(std::memory_order_relaxed)) return false;
  if (check >= Backoff::kChecksWithoutPause) cpu_relax();
  return true;
}

bool Worker::alone_with_rings() const noexcept {
  return ready_.empty() && !network_job_ && !trace_ && !cancel_seen_ && timers_.empty() && watches_.empty() &&
         deferred_active_.empty() && !endpoint_.has_staged() && !endpoint_.has_waiting_sends() &&
         !endpoint_.has_backlog() && thread_.runs_only(*this);
}

// Nothing to do after spinning and yielding: the thread may sleep in the
// kernel until something is rung, a full ring may have room, or the earliest
// sleeper's deadline is kTimerSpin away (the last stretch is spun: zero).
std::chrono::microseconds Worker::sleep_limit() const {
  auto max = endpoint_.has_backlog() || !deferred_active_.empty() ? std::chrono::microseconds(kBacklogSleep)
             : network_job_                                       ? std::chrono::microseconds(kNetworkIdleSleep)
                                                                  : std::chrono::microseconds(kIdleSleep);
  if (!cancel_seen_ && !timers_.empty()) {
    const auto until = timers_.earliest() - kTimerSpin - TimerHeap::Clock::now();
    if (until <= TimerHeap::Clock::duration::zero()) return std::chrono::microseconds::zero();
    max = std::min(max, std::chrono::ceil<std::chrono::microseconds>(until));
  }
  return max;
}

// Inlined into round(), its one caller: a switch costs no call of its own.
[[gnu::always_inline]] inline void Worker::resume(Process* p) {
  if (!p->started_) [[unlikely]] {  // its first resume: one test on every later one
    if (cancel_released_) {  // never started: nothing to unwind
      finish(p);
      return;
    }
    if (trace_) p->run_began_ = TraceBuffer::now();
    p->started_ = true;
  }
  ++resumes_;
  // Single writer: a relaxed store is enough, the watchdog only compares snapshots.
  const auto tick = published_.progress.load(std::memory_order_relaxed);
  published_.running_rank.store(p->rank(), std::memory_order_relaxed);
  published_.progress.store(tick + 1, std::memory_order_relaxed);
  p->resume_point_.resume();
  published_.progress.store(tick + 2, std::memory_order_relaxed);
  if (p->main_.handle().done()) finish(p);
}

// One scheduling round: every process that is ready now runs once. Those made
// ready meanwhile run in the same round too, up to kExtraResumes of them, as
// long as nothing waits for the end of the round (a packet a full ring left,
// an active message for this one): a hand-off between processes of this core
// then costs a switch, not a pass through poll and flush, while a handler
// still runs at the end of the round it was posted in.
// A process that unwound in the middle of the round may have cancelled the job
// (quiesce_before_unwinding): the rest of the round then waits for the release.
void Worker::round() {
  std::size_t ready_at_start = ready_.size(), extra = kExtraResumes;
  while (!ready_.empty() && (!cancel_seen_ || cancel_released_)) {
    if (ready_at_start > 0) {
      --ready_at_start;
    } else if (extra > 0 && !endpoint_.has_staged()) {
      --extra;
    } else {
      return;
    }
    if (Process* p = next_ready()) resume(p);
  }
}

Process* Worker::next_ready() {
  const ReadyQueue::Entry e = ready_.pop();
  if (!e.to_check) return e.process;
  if (!e.process->may_go_on()) return nullptr;
  e.process->parked_ = false;  // as Process::wake
  return e.process;
}

// Ends the waits for which over(wait) holds: sets each one's flag, notifies
// its process and drops it (order not kept). Whether any ended.
template <class Wait, class Over>
bool Worker::end_waits(std::vector<Wait>& waits, Over&& over) {
  bool any = false;
  for (std::size_t i = 0; i < waits.size();) {
    Wait& w = waits[i];
    if (!over(w)) {
      ++i;
      continue;
    }
    *w.done = true;
    w.process->notify();
    w = waits.back();
    waits.pop_back();
    any = true;
  }
  return any;
}

// Words other cores store, that this core's processes wait for (watch()).
// Acquire pairs with the release store of the word's core: what it did
// before (copies, published buffers) is visible to the woken process.
bool Worker::poll_watches() {
  return end_waits(watches_, [](const Watch& w) { return w.word->load(std::memory_order_acquire) >= w.target; });
}

bool Worker::watch_satisfied() const noexcept {
  for (const Watch& w : watches_) {
    if (w.word->load(std::memory_order_acquire) >= w.target) return true;  // as in poll_watches
  }
  return false;
}

void Worker::leave_job() {
  watches_.clear();
  // Packets still in the rings are plain bytes owned by the rings; they go with the Job.
  ready_.reset(0);
  trace_ = nullptr;
  timers_.reset(0);  // what a cancelled job's sleepers left
  published_.sleepers.store(0, std::memory_order_relaxed);  // single writer; see sleepers()
  unreceived_ = endpoint_.stop();
  drop_deferred_active();
  transport_.detach();
  if (network_job_) network_->detach();
  kernel_calls_ = thread_.kernel_calls() - kernel_calls_before_;
  running_job = 0;
  Job& job = *std::exchange(job_, nullptr);
  // acq_rel: the last worker out sees everything the others did in the job.
  if (job.workers_inside.fetch_sub(1, std::memory_order_acq_rel) == 1) job.left.release();
}

// This worker copies nothing more out of other processes' buffers, and counts
// itself in `quiesced`.
void Worker::stop_reading_senders() {
  Job& job = *job_;
  cancel_seen_ = true;
  endpoint_.cancel();
  if (job.quiesced.fetch_add(1, std::memory_order_acq_rel) + 1 == job.worker_count()) job.wake_all_workers();
}

void Worker::stop_reading_if_cancelled() {
  // Acquire: pairs with Job::cancel()'s release, as in turn().
  if (!cancel_seen_ && job_->cancelled.load(std::memory_order_acquire)) stop_reading_senders();
}

void Worker::quiesce_before_unwinding() noexcept {
  Job& job = *job_;
  if (cancel_released_) return;  // every worker stopped reading long ago
  if (!cancel_seen_) {
    job.cancel();
    stop_reading_senders();
  }
  // The others count themselves at their next loop turn (the doorbell woke the
  // sleeping ones); a copy in progress there finishes first.
  Backoff backoff;
  while (job.quiesced.load(std::memory_order_acquire) < job.worker_count()) {
    thread_.stop_reading_for_cancelled_jobs(*this);
    backoff.wait([] { std::this_thread::sleep_for(std::chrono::microseconds(100)); });
  }
}

void Worker::finish_network_send(const SendState& s) noexcept {
  job_->cancel_everywhere();  // the receiving node takes the payload in only once cancelled
  Backoff backoff;
  while (!s.done) {
    const bool polled = endpoint_.poll();
    if (endpoint_.flush() || polled) {
      backoff.reset();
    } else {
      backoff.wait([] { std::this_thread::sleep_for(std::chrono::microseconds(100)); });
    }
  }
}

bool Worker::handle_cancel() {
  Job& job = *job_;
  if (!cancel_seen_) stop_reading_senders();
  if (job.quiesced.load(std::memory_order_acquire) < job.worker_count()) return false;
  cancel_released_ = true;
  watches_.clear();  // their processes unwind now; the flags go with their frames
  const bool stalled = job.stalled();
  for (Process* p : local_processes()) {
    if (p->finished_) continue;
    // Blocked when the stall was found: parked, or woken since (another node,
    // cancelled by this one's stall, may take in a payload it was sent, which
    // completes the send) but not resumed, so still naming what it waited for.
    if (stalled && (p->parked_ || p->waiting_for_)) job.add_stall_report(p->rank(), stall_line(*p));
    p->wake();  // it throws JobCancelled where it waits, and unwinds
  }
  return true;
}

std::string Worker::stall_line(const Process& p) const {
  std::string line = "rank " + std::to_string(p.rank()) + " (core " + std::to_string(os_core_) + ") waits ";
  const Process::Activity& call = p.parked_in_.what ? p.parked_in_ : p.activity_;
  if (call.what) line += "in " + std::string(call.what) + " on communicator " + std::to_string(call.context) + ", ";
  line += "for ";
  line += p.waiting_for_ ? p.waiting_for_ : "an event";
  if (p.waiting_peer_ != kAnySource) {
    line += " rank " + std::to_string(p.waiting_peer_);
  } else if (line.ends_with(" from")) {
    line += " any rank";
  }
  return line;
}

void Worker::finish(Process* p) {
  p->finished_ = true;
  if (trace_ && p->started_) [[unlikely]]
    trace_run(*p);
  --live_;
  if (p->started_) {
    if (std::exception_ptr error = p->main_.handle().promise().error) {
      try {
        std::rethrow_exception(error);
      } catch (const JobCancelled&) {
      } catch (...) {
        job_->fail(error, p->rank());
      }
    }
  }
  if (job_->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) job_->wake_all_workers();
}

void Worker::wake(Rank rank) { job_->process(rank).notify(); }

void Worker::run_active(ContextId context, Rank dst, Rank src, Tag handler, std::span<const std::byte> body) {
  const Group* g = job_->groups().find(context);
  if (!g) [[unlikely]] {
    deferred_active_.push_back({context, dst, src, handler, std::vector<std::byte>(body.begin(), body.end())});
    return;
  }
  Process& q = job_->process(dst);
  try {
    (*job_->handler(handler))(q, g->members().to_comm(src), body);
  } catch (...) {
    job_->fail(std::current_exception(), dst);
  }
  --g->core(job_->global_core(dst)).traffic;  // its post counted it on the sender's core (free())
  q.notify();
  // The last handler of a job whose processes have all finished lets the workers leave.
  if (job_->routes()[src].node == job_->node() && job_->active_pending.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
      job_->remaining.load(std::memory_order_acquire) == 0) {
    job_->wake_all_workers();
  }
}

bool Worker::run_deferred_active() {
  bool ran = false;
  for (std::size_t i = 0; i < deferred_active_.size();) {
    if (job_->groups().find(deferred_active_[i].context)) {
      const DeferredActive a = std::move(deferred_active_[i]);
      deferred_active_.erase(deferred_active_.begin() + static_cast<std::ptrdiff_t>(i));
      run_active(a.context, a.dst, a.src, a.handler, a.body);
      ran = true;
    } else {
      ++i;
    }
  }
  return ran;
}

void Worker::drop_deferred_active() {
  for (const DeferredActive& a : deferred_active_) {
    unreceived_.add(a.src, job_->routes()[a.dst].local, a.context, a.handler, a.body.size());
    if (job_->routes()[a.src].node == job_->node()) job_->active_pending.fetch_sub(1, std::memory_order_acq_rel);
  }
  deferred_active_.clear();
}

// A communicator this node has not made yet (a library's duplicate, made
// without communication, that no process here has asked for) has no lock to
// grant: refused, the requester tries again later.
bool Worker::try_busy_lock(ContextId context, Rank owner) {
  const Group* g = job_->groups().find(context);
  return g && g->busy_lock(g->members().to_comm(owner)).try_acquire();
}

void Worker::release_busy_lock(ContextId context, Rank owner) {
  const Group* g = job_->groups().find(context);  // granted, so made
  g->busy_lock(g->members().to_comm(owner)).release();
  --g->core(job_->global_core(owner)).traffic;  // its sender counted it (free())
}

}  // namespace switchyard::detail
