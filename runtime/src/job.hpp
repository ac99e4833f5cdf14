#pragma once
// One SPMD job: its processes, where each one lives (the route table), the
// core-to-core rings, its communicators, and the little state that every
// worker reads (cancellation, completion). Built by
// Runtime::run on the calling thread, torn down there once every worker has left it.
//
// A job across nodes (MPI ranks) is one Job per node, each built from the same
// arguments: all of them hold the whole route table, and each holds the
// Process objects of its own node's ranks only.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <utility>
#include <vector>

#include "group_registry.hpp"
#include "network_session.hpp"
#include "route_table.hpp"
#include "shared_memory_transport.hpp"
#include "switchyard/cache_line.hpp"
#include "switchyard/process.hpp"
#include "switchyard/runtime.hpp"

namespace switchyard::detail {

class Worker;
class TraceBuffer;
class NodeStagingPool;

// Where a job runs: this node, and every node's cores.
struct JobNodes {
  NetworkSession* session = nullptr;  // the Runtime's; nullptr: a one-node job
  std::uint32_t node = 0;
  std::vector<std::vector<int>> cores;  // per node: the OS cores of its workers
  NodeStagingPool* staging = nullptr;  // the Runtime's, kept from job to job (node_staging_pool.hpp)
  KeptLibraries* libraries = nullptr;  // the Runtime's: made in the job before its processes start
};

// Every rank's (node, core): ranks in blocks over the nodes, then `placement`
// over each node's cores (one node: `placement` alone).
RouteTable route_job(std::uint64_t processes, const Placement& placement, const std::vector<std::vector<int>>& cores);

class Job {
 public:
  // `rings`: between the workers' cores, of options.ring_capacity, empty (WorkerSets::Borrowed::rings).
  Job(std::vector<Worker*> workers, RingSet& rings, std::uint64_t processes, const ProcessBody& body,
      RunOptions options, JobNodes nodes);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // --- immutable while the job runs: read freely by every thread ---
  // This job's number in the program: 1 for the first job of any Runtime, then
  // counted up (JobStats::job). Communicators carry it (running_job).
  std::uint64_t serial() const noexcept { return serial_; }
  Rank size() const noexcept { return routes_.size(); }
  // A process of this node.
  Process& process(Rank r) noexcept { return *by_rank_[r]; }
  // Rank r's core, as RouteTable::global_core numbers the cores of every node.
  std::uint32_t global_core(Rank r) const noexcept { return routes_.global_core(r); }
  std::uint32_t node() const noexcept { return nodes_.node; }
  // The job across nodes as the network sees it, else nullptr (a one-node job).
  NetworkJob* network() const noexcept { return network_.get(); }
  NetworkSession* network_session() const noexcept { return nodes_.session; }
  NodeStagingPool& staging_pool() const noexcept { return *nodes_.staging; }
  const JobNodes& nodes() const noexcept { return nodes_; }
  const RouteTable& routes() const noexcept { return routes_; }
  RingSet& rings() noexcept { return *rings_; }
  std::uint32_t worker_count() const noexcept { return static_cast<std::uint32_t>(workers_.size()); }
  Worker& worker(std::uint32_t w) noexcept { return *workers_[w]; }
  const std::vector<Process*>& local_processes(std::uint32_t w) const noexcept { return local_[w]; }
  const RunOptions& options() const noexcept { return options_; }
  // Worker w's buffer when the job records a trace (options().trace), else nullptr.
  TraceBuffer* trace_buffer(std::uint32_t w) const noexcept {
    return trace_buffers_.empty() ? nullptr : trace_buffers_[w];
  }
  // The job's communicators; the world's context is 0.
  GroupRegistry& groups() noexcept { return *groups_; }
  const Group& world() const noexcept { return groups_->world(); }
  const ActiveMessageHandler* handler(HandlerId id) const noexcept {
    auto it = options_.handlers.find(id);
    return it == options_.handlers.end() ? nullptr : &it->second;
  }

  // --- shared, written by any worker ---
  // First real error wins and cancels the job. JobCancelled unwinding is not an error.
  // In a job across nodes, the first error of this node's is announced to the
  // others (naming this node and `rank`, the process that raised it).
  void fail(std::exception_ptr error, Rank rank = kAnySource);
  // Another node failed: cancels this node's part with a RemoteFailure.
  void fail_remotely(const std::string& text);
  // Stopped from outside (RunOptions::stop): fails the job with a JobCancelled
  // naming it, unless every process has finished already.
  void stop_from_outside();
  // Cancels without an error of its own: the one that caused it is recorded by fail() later.
  void cancel();
  // The same on every node, at once (once per job): a process unwinding past
  // a payload it sent to another node needs that node cancelled before its
  // failure is known (Worker::finish_network_send).
  void cancel_everywhere();
  // The watchdog saw no progress: cancel, and have every worker describe its blocked processes.
  void stall();
  bool stalled() const noexcept { return stalled_.load(std::memory_order_acquire); }
  // Rank r's line of the stall report, unless it has one (a process found
  // running by not_yielding() is blocked by the time its worker describes it).
  void add_stall_report(Rank r, std::string line);
  // Why the job stalls, when it is not "no progress" (before stall()).
  void set_stall_cause(std::string cause);
  // The watchdog saw one resume of `rank` last longer than the stall timeout:
  // says so on stderr now and stalls the job, which fails once the rank yields.
  void not_yielding(Rank rank, int core, std::chrono::steady_clock::duration running);
  std::exception_ptr error() const;
  std::string stall_report() const;

  // Cores' programs of compiled exchanges compiled in this job, rather than
  // taken from a CompiledProgramCache (JobStats). Relaxed: a tally, read after
  // the workers have joined.
  std::atomic<std::uint64_t> copy_programs_compiled{0};
  // Set once, by fail() or stall(); acquire pairs with their release so that a
  // worker seeing it also sees stalled_ and the recorded error.
  std::atomic<bool> cancelled{false};
  // Workers that have seen `cancelled` and stopped resuming processes. Unwinding
  // starts only when all have (acq_rel: everything a worker did before counting
  // itself, like copying out of another process's buffer, happens before any
  // process unwinds and frees its buffers).
  std::atomic<std::uint32_t> quiesced{0};
  // Processes that have not finished; the worker that takes it to zero wakes the others.
  std::atomic<std::uint64_t> remaining{0};
  // Active messages posted to a process of this node whose handler has not
  // run yet. The job ends only once it is 0 (or cancelled): a message posted
  // as a process's last act still runs its handler, and what the handler
  // throws fails the job. Incremented by the poster before the message leaves
  // (relaxed: the message's own hand-over orders it before the decrement),
  // decremented after the handler ran (acq_rel); the workers read it after
  // `remaining` (acquire), which the poster released after posting.
  alignas(kCacheLine) std::atomic<std::uint64_t> active_pending{0};
  bool active_messages_run() const noexcept { return active_pending.load(std::memory_order_acquire) == 0; }
  // Workers still inside the job; the last to leave releases `left`.
  std::atomic<std::uint32_t> workers_inside{0};
  std::binary_semaphore left{0};
  void wake_all_workers();

 private:
  const std::uint64_t serial_;
  RunOptions options_;
  std::vector<Worker*> workers_;
  void create_local_processes();

  JobNodes nodes_;
  // Begun on every node in the same order (Runtime::run, one job at a time).
  std::unique_ptr<NetworkJob> network_;
  RouteTable routes_;
  std::vector<std::unique_ptr<Process>> processes_;  // this node's
  std::vector<Process*> by_rank_;  // by job rank; nullptr on other nodes
  std::vector<std::vector<Process*>> local_;
  RingSet* rings_;  // the workers' set's, lent for the job
  std::unique_ptr<GroupRegistry> groups_;  // after the processes: the world's membership points at them
  std::vector<TraceBuffer*> trace_buffers_;  // by worker; owned by options_.trace

  std::atomic<bool> stalled_{false};  // release/acquire with `cancelled`'s ordering (set before it)
  // Whether cancel_everywhere() announced; only its exchange reads it (relaxed: it guards one announcement).
  std::atomic<bool> cancel_announced_{false};
  mutable std::mutex mutex_;  // guards first_error_, report_ and stall_cause_
  std::exception_ptr first_error_;
  struct StallLine {
    bool running = false;  // not_yielding(): it ran, nothing blocked it
    std::string text;
  };
  std::map<Rank, StallLine> report_;  // by rank: one line a process
  std::string stall_cause_;  // empty: no progress at all
};

}  // namespace switchyard::detail
