#pragma once
// A worker: one job's part of one core. The core's thread (worker_thread.hpp)
// runs it in turns, beside the Workers of the other jobs running there: take
// in what the transport brought (and send the answers that takes), resume the
// processes that are ready (what they post leaves at once), then flush what
// full rings left. Everything of a job that lives on this core (processes,
// mailboxes, requests, ready queue) is touched by that thread alone.

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "backoff.hpp"
#include "doorbell.hpp"
#include "endpoint.hpp"
#include "network_transport.hpp"
#include "shared_memory_transport.hpp"
#include "switchyard/assert.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/process.hpp"
#include "switchyard/topology.hpp"
#include "timer_heap.hpp"
#include "trace_buffer.hpp"
#include "worker_thread.hpp"

namespace switchyard::detail {

class Job;

class Worker final : private EndpointClient {
 public:
  // A worker of `thread`'s core, for one job at a time.
  explicit Worker(WorkerThread& thread);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  std::uint32_t index() const noexcept { return index_; }
  int os_core() const noexcept { return os_core_; }

  // --- called by the Runtime on its own thread ---
  // Hands `job` to the core's thread, which runs this worker in it until the job is over here.
  void start(Job* job);
  // Resumes and packets moved while a process is not finished: the watchdog
  // calls a job stalled when no worker's progress changes for a whole stall
  // timeout. Packets count: one large eager message through a full ring is
  // thousands of hand-offs with no process resumed, each a sleep of its
  // sender's core on a loaded machine.
  std::uint64_t progress() const noexcept { return published_.progress.load(std::memory_order_relaxed); }
  // The process being resumed, when progress() is odd (relaxed: read with it, for a diagnostic only).
  Rank running_rank() const noexcept { return published_.running_rank.load(std::memory_order_relaxed); }
  // Processes of this core asleep until a deadline (relaxed: the watchdog only
  // needs to see, within its poll period, that a job waits for a timer).
  std::uint32_t sleepers() const noexcept { return published_.sleepers.load(std::memory_order_relaxed); }
  Doorbell& doorbell() noexcept { return thread_.doorbell(); }

  // --- called by the core's thread ---
  void enter_job();
  enum class Turn { kIdle, kBusy, kOver };
  // One turn: take in, resume, flush. kOver: the job is over on this core; leave_job() next.
  Turn turn();
  // Whether an idle turn should be followed by spinning rather than sleeping at once.
  bool spin_pays() const noexcept;
  // Whether a turn now may find something to do, checked between the idle
  // turns of a spin (WorkerThread::thread_main): what another core sent or
  // stored for this one, what waits here to leave, a cancellation, the job's
  // end. False may miss only what a later full turn takes up (a timer's
  // deadline, an MPI packet): those jobs are never just peeked at.
  bool may_have_work() const noexcept;
  // How long the thread may sleep for this job (zero: spin, a deadline is near).
  std::chrono::microseconds sleep_limit() const;
  bool has_pending_work();
  // Leaves the job. The thread's last touch of this worker: its set may be borrowed by another job from then on.
  void leave_job();
  // Counts this worker as stopped reading if its job is cancelled (WorkerThread::stop_reading_for_cancelled_jobs).
  void stop_reading_if_cancelled();

  // --- called on this worker's thread only (by its processes) ---
  void make_ready(Process* p) { ready_.push(p); }
  // Process::notify() for each process of [first, last) but `running` (the
  // one that calls it), in that order: the processes of this core that a
  // core-wide call's last arrival releases. They are queued as they are, each
  // to be checked when its turn comes (next_ready), not here: with hundreds
  // of processes on a core none of their lines is in L1, and a pass that
  // checked each one here would miss on every one of them, and their resumes
  // would miss again. Where the queue has no room for them to be checked
  // later (see ReadyQueue), each is checked now.
  template <class It>
  void notify_each(It first, It last, const Process& running) {
    if (ready_.room_to_check() >= static_cast<std::size_t>(last - first)) {
      for (; first != last; ++first) {
        if (*first != &running) ready_.push_to_check(*first);
      }
      return;
    }
    for (; first != last; ++first) (*first)->notify();
  }
  // A process of this core is about to park until `flag` is set: polls the
  // rings in its stead for a short, bounded while, as long as nothing else of
  // the core could run. Whether `flag` got set (the process goes on). Inline
  // up to the first test: a hand-off between processes of one core (another
  // one is ready) pays one load for it.
  bool poll_before_parking(const bool& flag) noexcept { return ready_.empty() && poll_alone(flag); }
  // A process of this core is about to wait for other cores (their words in
  // a compiled run or a barrier): checks `reached` itself for a short,
  // bounded while, where nothing else of the core could run, as
  // poll_before_parking does for a message. The task, the watch, the park
  // and the resume it saves cost a small run more than its copies, and most
  // waits are one core's few hundred nanoseconds behind the other. Stops at
  // a packet for any process of the core (the worker delivers it) and at
  // cancellation. Whether `reached` held; `reached` may throw.
  template <class Reached>
  bool wait_alone(Reached&& reached) {
    if (!ready_.empty() || !alone_with_rings()) return false;
    for (std::uint32_t check = 0; check < kSelfPollChecks; ++check) {
      if (reached()) return true;
      if (!keep_waiting_alone(check)) return false;
    }
    return false;
  }
  // Whether a process of this core is ready to run now.
  bool has_ready() const noexcept { return !ready_.empty(); }
  // `p` sleeps until `deadline`; the worker wakes it (Process::timer_expired) then.
  void add_timer(TimerHeap::Clock::time_point deadline, Process* p);
  // Whether this core has seen its job cancelled: a reference, which each
  // process keeps (Process::check_cancelled reads it without a call).
  const bool& cancelling() const noexcept { return cancel_seen_; }
  // `p` waits until `word` reaches `target` (another core's progress in a
  // compiled exchange): the loop checks it every turn, and once it holds sets
  // `done` and notifies p. Whoever stores the word rings this worker's
  // doorbell, so a sleeping worker sees it at once. Never allocates: room for
  // one watch per process of the core is kept. Cancellation drops the watch
  // (p unwinds; `done` goes with its frame).
  void watch(const std::atomic<std::uint64_t>& word, std::uint64_t target, bool& done, Process& p) {
    watches_.push_back({&word, target, &done, &p});
  }
  // Ends at once the watches whose words have reached their targets, as the
  // loop's next turn would: their processes are queued ahead of whatever the
  // caller queues next (a yield), and run before the loop polls again.
  void end_watches_now() { poll_watches(); }
  Endpoint& endpoint() noexcept { return endpoint_; }
  const std::vector<Process*>& local_processes() const;
  Job& job() noexcept { return *job_; }
  // A process unwinds while another core may still copy out of its buffers (a
  // single-copy send in flight): cancels the job and returns once every worker
  // has stopped reading from other processes, so the buffers may go.
  void quiesce_before_unwinding() noexcept;
  // A process unwinds past a send whose payload MPI may still read from its
  // buffer: returns once the payload has moved, polling this core's transports
  // meanwhile (the receiving node, cancelled too, takes it in to drop it).
  // Never, if that node can no longer: the watchdog's MPI_Abort then ends it.
  void finish_network_send(const SendState& s) noexcept;

  std::uint64_t resumes() const noexcept { return resumes_; }
  // Calls into the kernel to wait while the last job ran on this core:
  // sleeps, wake-ups of the core's thread, yields (for any job running there).
  std::uint64_t kernel_calls() const noexcept { return kernel_calls_; }
  // The messages the last job left in this core's mailboxes, never received.
  const UnreceivedMessages& unreceived() const noexcept { return unreceived_; }
  const TransportStats& transport_stats() const noexcept { return transport_.stats(); }
  // What the last job left in this core's staging and rings: for Runtime::run,
  // once every worker has left the job.
  SharedMemoryTransport& transport() noexcept { return transport_; }

 private:
  friend class WorkerThread;  // links the workers it is handed (next_started_)

  void round();
  void resume(Process* p);
  void finish(Process* p);
  void trace_run(const Process& p);  // trace.cpp
  bool handle_cancel();
  // A blocked process's line of the stall report: what it waits for, in the call it is in.
  std::string stall_line(const Process& p) const;
  void stop_reading_senders();
  void expire_timers();
  // Between resumes (progress is even): keeps it even.
  void note_packets_moved() noexcept {
    // Single writer: a relaxed store is enough, the watchdog only compares snapshots.
    published_.progress.store(published_.progress.load(std::memory_order_relaxed) + 2, std::memory_order_relaxed);
  }
  bool poll_watches();
  template <class Wait, class Over>
  static bool end_waits(std::vector<Wait>& waits, Over&& over);
  bool watch_satisfied() const noexcept;
  bool poll_alone(const bool& flag) noexcept;  // poll_before_parking() with no process ready
  // How many times a process about to park checks for what it waits for
  // itself (poll_alone, wait_alone): a few microseconds back to back, then a
  // pause between checks, tens of microseconds in all.
  static constexpr std::uint32_t kSelfPollChecks = 1024;
  // wait_alone's check `check` found nothing: false if it must stop (a packet
  // came, or the job is being cancelled), else pauses where Backoff would.
  bool keep_waiting_alone(std::uint32_t check) const noexcept;
  // Whether a process about to park may poll in the worker's stead: nothing
  // else of the core waits for the worker (see poll_before_parking).
  bool alone_with_rings() const noexcept;

  // EndpointClient
  void wake(Rank rank) override;
  void run_active(ContextId context, Rank dst, Rank src, Tag handler, std::span<const std::byte> body) override;
  void delivered(const RecvState& r, std::uint64_t started) override;
  bool try_busy_lock(ContextId context, Rank owner) override;
  void release_busy_lock(ContextId context, Rank owner) override;

  // --- written by the core's thread, read by the watchdog and the Runtime ---
  struct alignas(kCacheLine) Published {
    // Bumped before and after every resume (odd means a process is running),
    // and by 2 after a turn that moved packets while a process was not finished.
    std::atomic<std::uint64_t> progress{0};
    std::atomic<Rank> running_rank{0};  // stored before progress turns odd
    std::atomic<std::uint32_t> sleepers{0};  // timers_.size(), for the watchdog
  };
  static_assert(kOwnsCacheLines<Published>, "shared across cores: cache lines of its own");
  Published published_;

  // --- this worker's own ---
  alignas(kCacheLine) WorkerThread& thread_;
  const std::uint32_t index_;
  const int os_core_;
  // Set by start() before it hands this worker over (WorkerThread::start publishes it).
  Job* job_ = nullptr;
  Worker* next_started_ = nullptr;  // WorkerThread's list of workers handed over
  // Processes to resume, in order: each one woken (Process::wake cleared its
  // parked_ as it queued it) or yielding, or queued by notify_each to be
  // checked when popped (a process that was woken since finds its entry to
  // check not parked, and is not resumed twice). Never full, and it never
  // grows during a job: a process is queued once per park or yield, so at
  // most one entry per process of the core is of the first kind, and entries
  // to check are let in only while they number at most as many.
  class ReadyQueue {
   public:
    struct Entry {
      Process* process = nullptr;
      bool to_check = false;  // queued by notify_each: may_go_on() is still to be asked
    };
    // Room for 2 entries per process and one more, rounded up to a power of
    // two: the indices wrap with a mask, not a compare with the size.
    void reset(std::size_t processes) {
      slots_.assign(std::bit_ceil(2 * processes + 1), Entry{});
      mask_ = slots_.size() - 1;
      processes_ = processes;
      head_ = tail_ = to_check_ = 0;
    }
    bool empty() const noexcept { return head_ == tail_; }
    std::size_t size() const noexcept { return (tail_ - head_) & mask_; }
    void push(Process* p) noexcept { append(Entry{p, false}); }
    // How many more entries to check the queue lets in.
    std::size_t room_to_check() const noexcept { return processes_ - to_check_; }
    void push_to_check(Process* p) noexcept {
      SWITCHYARD_ASSERT(to_check_ < processes_);
      ++to_check_;
      append(Entry{p, true});
    }
    Entry pop() noexcept {
      SWITCHYARD_ASSERT(!empty());
      const Entry e = slots_[head_];
      head_ = (head_ + 1) & mask_;
      to_check_ -= e.to_check;
      return e;
    }

   private:
    void append(Entry e) noexcept {
      slots_[tail_] = e;
      tail_ = (tail_ + 1) & mask_;
      SWITCHYARD_ASSERT(tail_ != head_);  // never full (see above)
    }
    std::vector<Entry> slots_;
    std::size_t mask_ = 0;  // slots_.size() - 1
    std::size_t processes_ = 0;  // of the core
    std::size_t head_ = 0, tail_ = 0;
    std::size_t to_check_ = 0;  // entries to check in the queue
  };
  // The next process of the ready queue to resume; nullptr for an entry to
  // check whose process may not go on (it was woken since, and queued again
  // as such, or it is not parked).
  Process* next_ready();
  ReadyQueue ready_;
  TimerHeap timers_;
  std::size_t live_ = 0;  // processes of this core not finished
  SharedMemoryTransport transport_;
  std::unique_ptr<NetworkTransport> network_;  // made for the first job across nodes, kept for the next
  bool network_job_ = false;  // this job spans nodes: network_ is attached
  struct Watch {
    const std::atomic<std::uint64_t>* word;
    std::uint64_t target;
    bool* done;
    Process* process;
  };
  std::vector<Watch> watches_;  // watch(); reserved for every process of the core at the start of a job
  // Active messages that came on a communicator this node has not made yet
  // (its members here have not reached the dup or split that makes it, or
  // none asked for the library duplicate): run once it is made (each turn
  // retries). A rare path: the body is copied. Those whose communicator is
  // never made are dropped with the job and counted as messages nobody
  // received (RunOptions::strict).
  struct DeferredActive {
    ContextId context;
    Rank dst, src;
    Tag handler;
    std::vector<std::byte> body;
  };
  std::vector<DeferredActive> deferred_active_;
  bool run_deferred_active();
  void drop_deferred_active();  // at the end of the job, into unreceived_
  Endpoint endpoint_;
  TraceBuffer* trace_ = nullptr;  // the job's trace buffer of this core, or nullptr: set once per job
  bool cancel_seen_ = false;
  bool cancel_released_ = false;
  bool quiet_ = false;  // the last busy turn resumed processes but moved no message
  std::uint64_t resumes_ = 0;
  std::uint64_t kernel_calls_ = 0;
  std::uint64_t kernel_calls_before_ = 0;  // the thread's count when this job came in
  UnreceivedMessages unreceived_;
};

}  // namespace switchyard::detail
