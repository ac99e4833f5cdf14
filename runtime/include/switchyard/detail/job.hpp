#pragma once
// One SPMD job: its processes, where each one lives (the route table), the
// core-to-core rings, its communicators, and the little state that every
// worker reads (cancellation, completion). Built by
// Runtime::run on the calling thread, torn down there once every worker has left it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/detail/group_registry.hpp"
#include "switchyard/process.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/transport/route_table.hpp"
#include "switchyard/transport/shared_memory_transport.hpp"

namespace switchyard::detail {

class Worker;
class TraceBuffer;

class Job {
 public:
  Job(std::vector<Worker*> workers, std::uint64_t processes, const ProcessBody& body, RunOptions options);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // --- immutable while the job runs: read freely by every thread ---
  Rank size() const noexcept { return static_cast<Rank>(processes_.size()); }
  Process& process(Rank r) noexcept { return *processes_[r]; }
  std::uint32_t worker_of(Rank r) const noexcept { return routes_[r].core; }
  const RouteTable& routes() const noexcept { return routes_; }
  RingSet& rings() noexcept { return *rings_; }
  std::uint32_t worker_count() const noexcept { return static_cast<std::uint32_t>(workers_.size()); }
  Worker& worker(std::uint32_t w) noexcept { return *workers_[w]; }
  const std::vector<Process*>& local_processes(std::uint32_t w) const noexcept { return local_[w]; }
  const RunOptions& options() const noexcept { return options_; }
  // Worker w's buffer when the job records a trace (options().trace), else nullptr.
  TraceBuffer* trace_buffer(std::uint32_t w) const noexcept { return trace_buffers_.empty() ? nullptr : trace_buffers_[w]; }
  // The job's communicators; the world's context is 0.
  GroupRegistry& groups() noexcept { return *groups_; }
  const Group& world() const noexcept { return groups_->world(); }
  const ActiveMessageHandler* handler(HandlerId id) const noexcept {
    auto it = options_.handlers.find(id);
    return it == options_.handlers.end() ? nullptr : &it->second;
  }

  // --- shared, written by any worker ---
  // First real error wins and cancels the job. JobCancelled unwinding is not an error.
  void fail(std::exception_ptr error);
  // Cancels without an error of its own: the one that caused it is recorded by fail() later.
  void cancel();
  // The watchdog saw no progress: cancel, and have every worker describe its blocked processes.
  void stall();
  bool stalled() const noexcept { return stalled_.load(std::memory_order_acquire); }
  void add_stall_report(Rank r, std::string line);
  // The watchdog saw one resume of `rank` last longer than the stall timeout:
  // says so on stderr now and stalls the job, which fails once the rank yields.
  void not_yielding(Rank rank, int core, std::chrono::steady_clock::duration running);
  std::exception_ptr error() const;
  std::string stall_report() const;

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
  // Workers still inside the job; the last to leave releases `left`.
  std::atomic<std::uint32_t> workers_inside{0};
  std::binary_semaphore left{0};

  void wake_all_workers();

 private:
  RunOptions options_;
  std::vector<Worker*> workers_;
  RouteTable routes_;
  std::vector<std::unique_ptr<Process>> processes_;
  std::vector<std::vector<Process*>> local_;
  std::unique_ptr<RingSet> rings_;
  std::unique_ptr<GroupRegistry> groups_;  // after the processes: the world's membership points at them
  std::vector<TraceBuffer*> trace_buffers_;  // by worker; owned by options_.trace

  std::atomic<bool> stalled_{false};  // release/acquire with `cancelled`'s ordering (set before it)
  mutable std::mutex mutex_;          // guards first_error_, report_ and stall_cause_
  std::exception_ptr first_error_;
  std::vector<std::pair<Rank, std::string>> report_;
  std::string stall_cause_;  // empty: no progress at all
};

}  // namespace switchyard::detail
