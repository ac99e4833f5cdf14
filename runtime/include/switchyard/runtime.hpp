#pragma once
// The Runtime: one worker thread per chosen core, bound to it with hwloc, that
// runs SPMD jobs of software processes. Create it once in an application and
// call run() as often as needed; one job runs at a time (concurrent run() calls
// queue up). Workers with no job sleep in the kernel.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/placement.hpp"
#include "switchyard/process.hpp"
#include "switchyard/task.hpp"
#include "switchyard/topology.hpp"

namespace switchyard {

class TraceLog;

struct RuntimeOptions {
  // OS CPU numbers to start workers on; empty means every CPU this process may use.
  std::vector<int> cores;
  // Bind each worker to its core. Off only for experiments.
  bool bind = true;
  // Every job of this runtime records its trace into this log (trace.hpp),
  // unless its RunOptions name another. Not owned.
  TraceLog* trace = nullptr;
};

struct RunOptions {
  Placement placement = Placement::round_robin();
  // Cache lines each core-to-core ring holds (4 slots of 16 bytes each). 1
  // works; more lets senders run ahead.
  std::size_t ring_capacity = 1024;
  // Messages up to this many bytes are copied into the ring and the sender
  // continues at once; larger ones are copied once, by the receiver, out of the
  // sender's buffer. At most 1 MiB. 512 by measurement (README, "Where does a
  // message go"): below it eager exchanges win, from 1 KiB up single copy does.
  std::uint64_t eager_limit = 512;
  // A job in which no process makes progress for this long is aborted with a
  // StallError. A process that runs this long without yielding is named on
  // stderr at once, and the job fails with a StallError when it yields.
  std::chrono::milliseconds stall_timeout{60'000};
  // Active-message handlers by id, for this job.
  std::map<HandlerId, ActiveMessageHandler> handlers;
  // Records the job's trace (trace.hpp) into this log, not owned; or, with
  // trace_file, into that file alone (opened before the job starts, written
  // once it is over, also when it fails). Neither (and no RuntimeOptions::trace):
  // no trace, and no cost.
  TraceLog* trace = nullptr;
  std::string trace_file;

  RunOptions& on_active_message(HandlerId id, ActiveMessageHandler h) {
    handlers[id] = std::move(h);
    return *this;
  }
  // For libraries: registers h under `preferred`, or under the next id above it
  // that is free, and returns the id, so that two users of one preferred id
  // (two instances of a library in one job) never replace each other.
  HandlerId add_handler(HandlerId preferred, ActiveMessageHandler h) {
    HandlerId id = preferred;
    while (handlers.count(id)) ++id;
    handlers[id] = std::move(h);
    return id;
  }
};

// Statistics of the last job, for benchmarks and diagnostics.
struct JobStats {
  std::uint64_t resumes = 0;       // process switches
  std::uint64_t slots = 0;         // 16-byte ring slots that crossed cores (headers and eager payloads)
  std::uint64_t ring_full = 0;  // times a sender found a core-to-core ring full
};

using ProcessBody = std::function<Task<void>(Process&)>;

namespace detail {
class Worker;
class Job;
}  // namespace detail

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Runs `processes` software processes, each executing body(process), and
  // returns when all have finished. If one throws, the others are cancelled and
  // the first exception is rethrown here. Calling it from inside one of this
  // runtime's processes is an InvalidArgument (it could never return).
  JobStats run(std::uint64_t processes, const ProcessBody& body, RunOptions options = {});

  const std::vector<int>& cores() const noexcept { return cores_; }
  const Topology& topology() const noexcept { return *topology_; }
  // How each worker is bound, one line per worker, read back from the OS.
  std::vector<std::string> worker_bindings() const;

 private:
  std::unique_ptr<Topology> topology_;
  std::vector<int> cores_;
  std::vector<std::unique_ptr<detail::Worker>> workers_;
  std::mutex run_mutex_;  // one job at a time
  TraceLog* default_trace_ = nullptr;

  void start_and_watch(detail::Job& job, const std::vector<detail::Worker*>& workers);
};

}  // namespace switchyard
