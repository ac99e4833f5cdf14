#pragma once
// A worker thread: the one thread bound to one core. It runs the Workers of
// every job that has processes on its core (worker.hpp: one Worker per job and
// core), a turn of each in turn, and sleeps in the kernel when none has
// anything to do. Jobs started from several host threads share the cores this
// way, as task groups share a oneTBB arena.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backoff.hpp"
#include "doorbell.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/topology.hpp"

namespace switchyard::detail {

class Worker;
class RingSet;

class WorkerThread {
 public:
  // realtime_priority: SCHED_FIFO at that priority (RuntimeOptions), 0: the normal policy.
  WorkerThread(std::uint32_t index, int os_core, const Topology& topology, bool bind, int realtime_priority);
  ~WorkerThread();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  std::uint32_t index() const noexcept { return index_; }
  int os_core() const noexcept { return os_core_; }
  std::string binding() const;
  // Whether the OS granted the real-time priority asked for (true when none was).
  bool realtime_granted() const noexcept { return published_.realtime.load(std::memory_order_acquire); }
  void wait_started() const;
  std::thread::id thread_id() const noexcept { return thread_.get_id(); }
  Doorbell& doorbell() noexcept { return doorbell_; }

  // Called by a Runtime's thread: this thread runs `w`, whose job is set,
  // beside its other jobs until that job is over here (Worker::leave_job).
  void start(Worker& w);

  // --- called on this thread only ---
  // Whether `w` is the only job this thread runs and no other waits to come in.
  bool runs_only(const Worker& w) const noexcept {
    // Relaxed: a hint; a job handed over meanwhile waits at most one bounded poll (Worker::poll_before_parking).
    return running_.size() == 1 && running_.front() == &w && !started_.load(std::memory_order_relaxed);
  }
  // Calls into the kernel to wait so far: sleeps, wake-ups of this thread, yields.
  std::uint64_t kernel_calls() const noexcept { return doorbell_.kernel_calls() + backoff_.yields(); }
  // From inside a process of `self` that waits for every worker of its job to
  // stop reading (Worker::quiesce_before_unwinding): this core's Workers of
  // the other jobs that are cancelled stop reading too. Otherwise two jobs
  // failing at once could each wait, on one core, for the other's worker on
  // that core, which only this thread runs.
  void stop_reading_for_cancelled_jobs(const Worker& self);

 private:
  void thread_main();
  void take_started();
  bool has_pending_work();
  bool any_may_have_work() const;
  void idle_wait();

  // --- written by other threads ---
  // Workers handed over by start(), not yet taken (linked by Worker::next_started_).
  alignas(kCacheLine) std::atomic<Worker*> started_{nullptr};
  std::atomic<bool> stop_{false};  // set by ~WorkerThread
  Doorbell doorbell_;  // rung by anyone with work for this thread (its own cache line)
  // --- written by this thread, read by the Runtime ---
  struct alignas(kCacheLine) Published {
    std::atomic<bool> bound{true};  // whether binding to the core succeeded; read by binding()
    std::atomic<bool> started{false};  // set once the thread is bound; Runtime waits for it
    std::atomic<bool> realtime{true};  // whether SCHED_FIFO was granted; final once started (its release)
  };
  static_assert(kOwnsCacheLines<Published>, "shared across cores: cache lines of its own");
  Published published_;

  // --- this thread's own ---
  alignas(kCacheLine) const Topology& topology_;
  const std::uint32_t index_;
  const int os_core_;
  const bool bind_;
  const int realtime_priority_;
  std::vector<Worker*> running_;  // the Workers of the jobs running on this core
  Backoff backoff_;
  // Idle turns in a row while spinning; between two full turns the spin only
  // peeks (Worker::may_have_work), every kPeeksPerTurn-th pass is a full turn.
  std::uint32_t idle_passes_ = 0;
  static constexpr std::uint32_t kPeeksPerTurn = 32;
  std::thread thread_;  // last: starts once everything above is constructed
};

// Sets of Workers, one per core, each running one job at a time: a job
// borrows an idle set (the one most recently given back, whose pools are
// warm) or, when every set runs a job, a new one.
class WorkerSets {
 public:
  explicit WorkerSets(const std::vector<std::unique_ptr<WorkerThread>>& threads);
  ~WorkerSets();

  // A set borrowed for one job, given back when it goes.
  class Borrowed {
   public:
    explicit Borrowed(WorkerSets& sets);
    ~Borrowed();
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;
    const std::vector<Worker*>& workers() const noexcept { return workers_; }
    // The rings between these workers' cores for a job of `capacity_lines`:
    // the last job's on this set where it left them empty with that
    // capacity, otherwise new ones (RingSet::reusable).
    RingSet& rings(std::size_t capacity_lines);

   private:
    WorkerSets& sets_;
    std::vector<std::unique_ptr<Worker>> owned_;
    std::unique_ptr<RingSet> rings_;  // kept with the set, from job to job
    std::vector<Worker*> workers_;
  };

 private:
  // One worker per thread, and their rings: a job's at a time.
  struct Set {
    std::vector<std::unique_ptr<Worker>> workers;
    std::unique_ptr<RingSet> rings;
  };
  const std::vector<std::unique_ptr<WorkerThread>>& threads_;
  std::mutex mutex_;  // guards idle_: jobs start and end on any host thread
  std::vector<Set> idle_;
};

}  // namespace switchyard::detail
