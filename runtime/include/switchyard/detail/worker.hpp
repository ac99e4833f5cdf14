#pragma once
// A worker: the one thread bound to one core. It runs the processes placed on
// its core, drains the rings from the other cores in batches and flushes its own
// outgoing backlog. Everything of a job that lives on this core (processes,
// mailboxes, ready queue, collective slots) is touched by this thread alone.

#include <atomic>
#include <cstdint>
#include <deque>
#include <semaphore>
#include <thread>
#include <vector>

#include "switchyard/process.hpp"
#include "switchyard/topology.hpp"
#include "switchyard/transport/backoff.hpp"
#include "switchyard/transport/channel.hpp"
#include "switchyard/transport/mailbox.hpp"

namespace switchyard::detail {

class Job;

class Worker {
 public:
  Worker(std::uint32_t index, int os_core, const Topology& topology, bool bind);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  std::uint32_t index() const noexcept { return index_; }
  int os_core() const noexcept { return os_core_; }
  std::string binding() const;

  // --- called by the Runtime on its own thread ---
  void wait_started() const;
  void start(Job* job);
  std::uint64_t progress() const noexcept { return published_.progress.load(std::memory_order_relaxed); }
  // From any thread: if the worker sleeps, it wakes up.
  void wake();

  // --- called on this worker's thread only (by its processes) ---
  void make_ready(Process* p) { ready_.push_back(p); }
  bool cancelling() const noexcept { return cancel_seen_; }
  // Appends a message's packets to the ring towards worker `to`, behind any
  // backlog. Returns the sequence number of its last packet on that ring.
  std::uint64_t enqueue(std::uint32_t to, const PacketHeader& header, const std::byte* eager, std::uint64_t eager_bytes);
  std::uint64_t pushed(std::uint32_t to) const noexcept { return out_[to].pushed; }
  void wait_for_push(std::uint32_t to, SendState* s) { out_[to].waiting.push_back(s); }
  void queue_local_active(ContextId context, Rank dst, Rank src, HandlerId id, std::span<const std::byte> body);
  const std::vector<Process*>& local_processes() const;
  Job& job() noexcept { return *job_; }

  std::uint64_t resumes() const noexcept { return resumes_; }
  std::uint64_t packets() const noexcept { return packets_; }
  std::uint64_t mailbox_full() const noexcept { return mailbox_full_; }

 private:
  struct Outbound {
    Channel* ring = nullptr;
    std::deque<Packet> backlog;       // packets the full ring could not take yet, in order
    std::uint64_t enqueued = 0;       // packets handed to enqueue()
    std::uint64_t pushed = 0;         // packets the ring has accepted
    std::deque<SendState*> waiting;   // eager sends done once `pushed` reaches their ring_seq
  };
  struct Inbound {
    Channel* ring = nullptr;
    bool assembling = false;          // a message's continuation packets are still to come
    PacketHeader header{};
    ByteBuffer body;
    std::uint64_t filled = 0;
  };
  struct LocalActive {
    ContextId context;
    Rank dst, src;
    HandlerId id;
    ByteBuffer body;
  };

  void thread_main();
  void run_job();
  bool poll_inbound();
  void on_packet(Inbound& in, const Packet& p);
  void dispatch(const PacketHeader& h, ByteBuffer&& body);
  bool flush_outbound();
  void push_to(Outbound& out, std::uint32_t to);
  bool run_local_active();
  void resume(Process* p);
  void finish(Process* p);
  bool handle_cancel();
  void sleep(std::chrono::microseconds max);
  bool has_pending_work();
  void leave_job();

  // --- written by other threads ---
  struct alignas(64) Shared {
    std::atomic<Job*> next_job{nullptr};      // set by Runtime::run, taken by this worker (acq/rel hand-over of the Job)
    std::atomic<bool> stop{false};            // set by ~Worker
    std::atomic<bool> sleeping{false};        // set by this worker before it blocks, cleared by whoever wakes it
    std::counting_semaphore<> wakeup{0};      // released by the one waker that cleared `sleeping`
  } shared_;
  // --- written by this worker, read by the watchdog ---
  struct alignas(64) Published {
    std::atomic<std::uint64_t> progress{0};   // bumped before and after every resume: odd means a process is running
    std::atomic<bool> bound{true};            // whether binding to the core succeeded; read by binding()
    std::atomic<bool> started{false};         // set once the thread is bound; Runtime waits for it
  };
  Published published_;
  std::atomic<bool>& bound_ = published_.bound;

  // --- this worker's own ---
  const Topology& topology_;
  const std::uint32_t index_;
  const int os_core_;
  const bool bind_;
  Job* job_ = nullptr;
  std::deque<Process*> ready_;
  std::vector<Outbound> out_;
  std::vector<Inbound> in_;
  std::vector<LocalActive> local_active_;
  std::vector<Packet> scratch_;
  std::vector<Packet> batch_;
  std::uint64_t backlog_packets_ = 0;  // sum of out_[*].backlog sizes: lets the loop skip the flush
  bool cancel_seen_ = false;
  bool cancel_released_ = false;
  std::uint64_t resumes_ = 0, packets_ = 0, mailbox_full_ = 0;
  std::thread thread_;  // last: starts once everything above is constructed
};

}  // namespace switchyard::detail
