#pragma once
// A worker: the one thread bound to one core. It runs the processes placed on
// its core in scheduling rounds: take in what the transport brought (and send
// the answers that takes), resume the processes that are ready (what they post
// leaves at once), then flush what full rings left. Everything of a job that lives on this core
// (processes, mailboxes, requests, ready queue) is touched by this thread alone.

#include <atomic>
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

namespace switchyard::detail {

class Job;

class Worker final : private EndpointClient {
 public:
  // realtime_priority: SCHED_FIFO at that priority (RuntimeOptions), 0: the normal policy.
  Worker(std::uint32_t index, int os_core, const Topology& topology, bool bind, int realtime_priority);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  std::uint32_t index() const noexcept { return index_; }
  int os_core() const noexcept { return os_core_; }
  std::string binding() const;
  // Whether the OS granted the real-time priority asked for (true when none was).
  bool realtime_granted() const noexcept { return published_.realtime.load(std::memory_order_acquire); }

  // --- called by the Runtime on its own thread ---
  void wait_started() const;
  void start(Job* job);
  std::uint64_t progress() const noexcept { return published_.progress.load(std::memory_order_relaxed); }
  // The process being resumed, when progress() is odd (relaxed: read with it, for a diagnostic only).
  Rank running_rank() const noexcept { return published_.running_rank.load(std::memory_order_relaxed); }
  // Processes of this core asleep until a deadline (relaxed: the watchdog only
  // needs to see, within its poll period, that a job waits for a timer).
  std::uint32_t sleepers() const noexcept { return published_.sleepers.load(std::memory_order_relaxed); }
  std::thread::id thread_id() const noexcept { return thread_.get_id(); }
  Doorbell& doorbell() noexcept { return doorbell_; }

  // --- called on this worker's thread only (by its processes) ---
  void make_ready(Process* p) { ready_.push(p); }
  // `p` sleeps until `deadline`; the worker wakes it (Process::timer_expired) then.
  void add_timer(TimerHeap::Clock::time_point deadline, Process* p);
  bool cancelling() const noexcept { return cancel_seen_; }
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
  // Calls into the kernel to wait during the last job: sleeps, wake-ups of
  // this worker, yields.
  std::uint64_t kernel_calls() const noexcept { return kernel_calls_; }
  // The messages the last job left in this core's mailboxes, never received.
  const UnreceivedMessages& unreceived() const noexcept { return unreceived_; }
  const TransportStats& transport_stats() const noexcept { return transport_.stats(); }
  // What the last job left in this core's staging and rings: for Runtime::run,
  // once every worker has left the job.
  SharedMemoryTransport& transport() noexcept { return transport_; }

 private:
  void thread_main();
  void run_job();
  void round();
  void resume(Process* p);
  void finish(Process* p);
  void trace_run(const Process& p);  // trace.cpp
  bool handle_cancel();
  // A blocked process's line of the stall report: what it waits for, in the call it is in.
  std::string stall_line(const Process& p) const;
  void stop_reading_senders();
  bool has_pending_work();
  void expire_timers();
  void idle_wait();
  bool poll_watches();
  template <class Wait, class Over>
  static bool end_waits(std::vector<Wait>& waits, Over&& over);
  bool watch_satisfied() const noexcept;
  void leave_job();

  // EndpointClient
  void wake(Rank rank) override;
  void run_active(ContextId context, Rank dst, Rank src, Tag handler, std::span<const std::byte> body) override;
  void delivered(const RecvState& r, std::uint64_t started) override;
  bool try_busy_lock(ContextId context, Rank owner) override;
  void release_busy_lock(ContextId context, Rank owner) override;

  // --- written by other threads ---
  // Set by Runtime::run, taken by this worker (acquire/release hand-over of the Job).
  alignas(kCacheLine) std::atomic<Job*> next_job_{nullptr};
  std::atomic<bool> stop_{false};  // set by ~Worker
  Doorbell doorbell_;  // rung by anyone with work for this worker (its own cache line)
  // --- written by this worker, read by the watchdog and the Runtime ---
  struct alignas(kCacheLine) Published {
    std::atomic<std::uint64_t> progress{0};  // bumped before and after every resume: odd means a process is running
    std::atomic<Rank> running_rank{0};  // stored before progress turns odd
    std::atomic<bool> bound{true};  // whether binding to the core succeeded; read by binding()
    std::atomic<bool> started{false};  // set once the thread is bound; Runtime waits for it
    std::atomic<bool> realtime{true};  // whether SCHED_FIFO was granted; final once started (its release)
    std::atomic<std::uint32_t> sleepers{0};  // timers_.size(), for the watchdog
  };
  static_assert(kOwnsCacheLines<Published>, "shared across cores: cache lines of its own");
  Published published_;

  // --- this worker's own ---
  alignas(kCacheLine) const Topology& topology_;
  const std::uint32_t index_;
  const int os_core_;
  const bool bind_;
  const int realtime_priority_;
  Job* job_ = nullptr;
  // Processes to resume, FIFO. A process is in it at most once (only a parked
  // or yielding process is put in), so it holds at most the core's processes
  // and never grows during a job.
  class ReadyQueue {
   public:
    void reset(std::size_t capacity) {
      slots_.assign(capacity + 1, nullptr);
      head_ = tail_ = 0;
    }
    bool empty() const noexcept { return head_ == tail_; }
    std::size_t size() const noexcept { return tail_ >= head_ ? tail_ - head_ : tail_ + slots_.size() - head_; }
    void push(Process* p) noexcept {
      SWITCHYARD_ASSERT(size() + 1 < slots_.size());  // a process is queued at most once: never full
      slots_[tail_] = p;
      tail_ = tail_ + 1 == slots_.size() ? 0 : tail_ + 1;
    }
    Process* pop() noexcept {
      SWITCHYARD_ASSERT(!empty());
      Process* p = slots_[head_];
      head_ = head_ + 1 == slots_.size() ? 0 : head_ + 1;
      return p;
    }

   private:
    std::vector<Process*> slots_;
    std::size_t head_ = 0, tail_ = 0;
  };
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
  std::uint64_t resumes_ = 0;
  std::uint64_t kernel_calls_ = 0;
  UnreceivedMessages unreceived_;
  std::thread thread_;  // last: starts once everything above is constructed
};

}  // namespace switchyard::detail
