#include "worker_thread.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>

#include "shared_memory_transport.hpp"
#include "switchyard/detail/frame_cache.hpp"
#include "worker.hpp"

namespace switchyard::detail {

WorkerThread::WorkerThread(std::uint32_t index, int os_core, const Topology& topology, bool bind, int realtime_priority)
    : topology_(topology), index_(index), os_core_(os_core), bind_(bind), realtime_priority_(realtime_priority) {
  thread_ = std::thread([this] { thread_main(); });
}

WorkerThread::~WorkerThread() {
  stop_.store(true, std::memory_order_release);  // pairs with the acquire loads in thread_main
  doorbell_.ring_fenced();  // the thread may sleep with no job (idle_wait)
  thread_.join();
}

std::string WorkerThread::binding() const {
  return "worker " + std::to_string(index_) + " on core " + std::to_string(os_core_) + ": bound to CPU set " +
         topology_.thread_binding(const_cast<std::thread&>(thread_).native_handle()) +
         (published_.bound.load(std::memory_order_acquire) ? "" : " (binding refused by the OS)");
}

void WorkerThread::wait_started() const { published_.started.wait(false, std::memory_order_acquire); }

void WorkerThread::start(Worker& w) {
  // Release: the Job, and w's pointer to it, written before are seen by
  // take_started()'s acquire exchange. A compare-exchange is a
  // read-modify-write, so the pushes of several host threads stay in one
  // release sequence that the exchange reads the end of.
  Worker* head = started_.load(std::memory_order_relaxed);
  do {
    w.next_started_ = head;
  } while (!started_.compare_exchange_weak(head, &w, std::memory_order_release, std::memory_order_relaxed));
  doorbell_.ring_fenced();  // the thread may sleep with no job (idle_wait)
}

// The Workers start() handed over join the running ones (their order does not matter).
void WorkerThread::take_started() {
  // Acquire: pairs with start()'s release (see there).
  for (Worker* w = started_.exchange(nullptr, std::memory_order_acquire); w;) {
    Worker* next = w->next_started_;
    w->enter_job();
    running_.push_back(w);
    w = next;
  }
}

bool WorkerThread::has_pending_work() {
  // Acquire: pairs with ~WorkerThread's and start()'s releases.
  if (stop_.load(std::memory_order_acquire) || started_.load(std::memory_order_acquire)) return true;
  return std::any_of(running_.begin(), running_.end(), [](Worker* w) { return w->has_pending_work(); });
}

// Nothing to do after spinning and yielding (or no job at all): sleep in the
// kernel until something is rung or the most pressing job's limit. With no
// job, only start() and the destructor have work for this thread, and both
// ring with a fence of their own (Doorbell::ring_fenced): the sleep needs no
// barrier on the other threads then.
void WorkerThread::idle_wait() {
  std::chrono::microseconds max = std::chrono::seconds(1);
  for (Worker* w : running_) max = std::min(max, w->sleep_limit());
  if (max <= std::chrono::microseconds::zero()) {
    cpu_relax();
    return;
  }
  doorbell_.sleep([this] { return has_pending_work(); }, max,
                  running_.empty() ? Doorbell::WokenBy::fenced_rings : Doorbell::WokenBy::any_ring);
}

void WorkerThread::stop_reading_for_cancelled_jobs(const Worker& self) {
  // Relaxed: a hint; take_started()'s exchange is the acquire.
  if (started_.load(std::memory_order_relaxed)) take_started();
  for (Worker* w : running_) {
    if (w != &self) w->stop_reading_if_cancelled();
  }
}

void WorkerThread::thread_main() {
  published_.bound.store(!bind_ || topology_.bind_this_thread(os_core_), std::memory_order_relaxed);
  // Timed sleeps end when asked, not up to 50 us later (the default slack that
  // lets the kernel merge wake-ups): a sleeping process's deadline depends on it.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (realtime_priority_ > 0) {
    const sched_param fifo{.sched_priority = realtime_priority_};
    // Relaxed: published by the release store of `started` below.
    published_.realtime.store(pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0, std::memory_order_relaxed);
  }
  FrameCache::reserve_for_this_thread();  // on its core, bound: the page is the core's node's
  published_.started.store(true, std::memory_order_release);  // pairs with wait_started(): bound is final
  published_.started.notify_all();
  for (;;) {
    if (stop_.load(std::memory_order_acquire)) return;  // pairs with ~WorkerThread
    // Relaxed: a hint; take_started()'s exchange is the acquire.
    if (started_.load(std::memory_order_relaxed)) take_started();
    if (idle_passes_ % kPeeksPerTurn != 0 && !any_may_have_work()) {
      ++idle_passes_;
      backoff_.wait([this] { idle_wait(); });
      continue;
    }
    bool busy = false, spin = false;
    for (std::size_t i = 0; i < running_.size();) {
      Worker& w = *running_[i];
      const Worker::Turn turn = w.turn();
      if (turn == Worker::Turn::kOver) {
        running_[i] = running_.back();
        running_.pop_back();
        w.leave_job();  // the last touch of w: its set may be given back, or destroyed, from here on
        busy = true;
        continue;
      }
      busy |= turn == Worker::Turn::kBusy;
      spin |= turn == Worker::Turn::kIdle && w.spin_pays();
      ++i;
    }
    if (busy) {
      idle_passes_ = 0;
      backoff_.reset();
    } else if (spin) {
      ++idle_passes_;
      backoff_.wait([this] { idle_wait(); });
    } else {
      idle_passes_ = 0;
      idle_wait();
    }
  }
}

// While spinning, a pass that finds nothing costs a few loads instead of a
// turn of every job: what comes from another core is noticed that much sooner.
bool WorkerThread::any_may_have_work() const {
  return std::any_of(running_.begin(), running_.end(), [](const Worker* w) { return w->may_have_work(); });
}

WorkerSets::WorkerSets(const std::vector<std::unique_ptr<WorkerThread>>& threads) : threads_(threads) {}

WorkerSets::~WorkerSets() = default;

WorkerSets::Borrowed::Borrowed(WorkerSets& sets) : sets_(sets) {
  {
    std::lock_guard lock(sets_.mutex_);
    if (!sets_.idle_.empty()) {
      owned_ = std::move(sets_.idle_.back().workers);
      rings_ = std::move(sets_.idle_.back().rings);
      sets_.idle_.pop_back();
    }
  }
  if (owned_.empty()) {
    for (const auto& t : sets_.threads_) owned_.push_back(std::make_unique<Worker>(*t));
  }
  for (const auto& w : owned_) workers_.push_back(w.get());
}

WorkerSets::Borrowed::~Borrowed() {
  std::lock_guard lock(sets_.mutex_);
  sets_.idle_.push_back(Set{std::move(owned_), std::move(rings_)});
}

RingSet& WorkerSets::Borrowed::rings(std::size_t capacity_lines) {
  // The last job's workers have all left it (its caller saw them go before
  // giving the set back, under mutex_): nothing pushes or pops these rings.
  if (!rings_ || !rings_->reusable(capacity_lines)) {
    std::vector<Doorbell*> doorbells;
    for (Worker* w : workers_) doorbells.push_back(&w->doorbell());
    rings_.reset();  // the old ones first: the two need not be held at once
    rings_ = std::make_unique<RingSet>(std::move(doorbells), capacity_lines);
  }
  return *rings_;
}

}  // namespace switchyard::detail
