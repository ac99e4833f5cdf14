#pragma once
/// @file
/// The Runtime: one worker thread per chosen core, bound to it with hwloc, that
/// runs SPMD jobs of software processes. Create it once in an application and
/// call run() as often as needed, from any thread: jobs started from several
/// threads at once run side by side, their processes sharing the workers (as
/// task groups share a oneTBB arena). Each job keeps its own world,
/// communicators, statistics, failure and cancellation: one job's failure does
/// not touch another. Workers with no job that has work sleep in the kernel.
///
/// Across machines: started by `mpirun -np R program`, each MPI rank is one
/// node of every job. Every node constructs its Runtime and calls run() with
/// the same arguments in the same order (SPMD over nodes); the job's ranks are
/// numbered across all nodes, placed in blocks over the nodes (node k has ranks
/// [k*ceil(N/R), (k+1)*ceil(N/R))), then by RunOptions::placement over the
/// node's cores. switchyard initialises MPI (MPI_THREAD_MULTIPLE) when it sees
/// mpirun's environment and finalises it at exit; a program that initialised
/// MPI itself must have asked for MPI_THREAD_MULTIPLE, and finalises it. Without
/// mpirun, or built without MPI (SWITCHYARD_WITH_MPI), a job is one node.
/// One Runtime at a time per OS process may run jobs across nodes, and its
/// jobs run one at a time (concurrent run() calls queue up), so that every node
/// pairs the same calls.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/placement.hpp"
#include "switchyard/process.hpp"
#include "switchyard/task.hpp"
#include "switchyard/topology.hpp"

namespace switchyard {

class TraceLog;

/// How a Runtime starts its workers.
struct RuntimeOptions {
  /// OS CPU numbers to start workers on; empty means every CPU this process may use.
  std::vector<int> cores{};
  /// Bind each worker to its core. Off only for experiments.
  bool bind = true;
  /// Run the workers under SCHED_FIFO at this priority, 1..99 (0: the OS's
  /// normal policy). On a machine that other programs load, the rare slow
  /// exchanges are workers runnable but not running for whole scheduler ticks
  /// (docs/embedding.md, "Tails"); a real-time worker takes its core back at once. It
  /// still sleeps in the kernel when it has nothing to do. InvalidArgument
  /// where the OS refuses it (it needs CAP_SYS_NICE or RLIMIT_RTPRIO).
  int realtime_priority = 0;
  /// Every job of this runtime records its trace into this log (trace.hpp),
  /// unless its RunOptions name another. Not owned.
  TraceLog* trace = nullptr;
};

/// How run() runs one job.
struct RunOptions {
  /// Which of this node's cores each of its ranks runs on. Block by default,
  /// as MPI's launchers place ranks: neighbouring ranks (a halo's, a
  /// stencil's) share a core and their messages stay on it. round_robin() is
  /// one assignment away.
  Placement placement = Placement::block();
  /// Cache lines (cells) each core-to-core ring holds, each up to 3 slots of 16
  /// bytes (an 8-byte message is one cell). 1 works; more lets senders run ahead.
  /// A job has one ring for each ordered pair of the node's cores (64 KiB each
  /// by default), kept for the next job of the same capacity; rings that
  /// would take more memory than the machine allows are refused
  /// (InvalidArgument).
  std::size_t ring_capacity = 1024;
  /// Messages up to this many bytes are copied into the ring and the sender
  /// continues at once; larger ones are copied once, by the receiver, out of the
  /// sender's buffer. At most 1 MiB. 512 by measurement (docs/concepts.md, "Where does a
  /// message go"): below it eager exchanges win, from 1 KiB up single copy does.
  std::uint64_t eager_limit = 512;
  /// The same limit for messages to processes on other nodes (over MPI), at
  /// most 1 MiB. 4096, Open MPI's own shared-memory eager limit (btl vader):
  /// up to it, a copy into the batch costs less than the rendezvous's second
  /// MPI message (bench_nodes' one-way lines; docs/benchmarks.md, bench_nodes).
  std::uint64_t network_eager_limit = 4096;
  /// A job in which no process is resumed and no packet moves between cores
  /// for this long is aborted with a StallError (a large message crossing a
  /// full ring packet by packet is progress; once every process has finished,
  /// active messages alone are not). A process that runs this long
  /// without yielding is named on stderr at once, and the job fails with a
  /// StallError when it yields.
  std::chrono::milliseconds stall_timeout{60'000};
  /// Active-message handlers by id, for this job.
  std::map<HandlerId, ActiveMessageHandler> handlers;
  /// Records the job's trace (trace.hpp) into this log, not owned; or, with
  /// trace_file, into that file alone (opened before the job starts, written
  /// once it is over, also when it fails). Neither (and no RuntimeOptions::trace):
  /// no trace, and no cost.
  TraceLog* trace = nullptr;
  std::string trace_file;  ///< the file of this job's trace alone; empty: none (see trace)
  /// A job that ends with messages nobody received (they are dropped with it)
  /// fails with UnreceivedMessagesError; without strict, run() says so on
  /// stderr and returns, the count in JobStats::unreceived.
  bool strict = false;
  /// Stops the job from outside: once a stop is requested (from any thread:
  /// std::stop_source::request_stop), every process of the job is woken
  /// where it waits (a receive, a barrier, a compiled run, a sleep) with
  /// JobCancelled, and run() throws JobCancelled naming the job, within
  /// milliseconds. A process that computes without waiting or yielding ends
  /// at its next wait. A stop requested before run() starts the job ends it
  /// before any process runs; one requested after the job's processes have
  /// all finished changes nothing. No token (the default): no cost.
  std::stop_token stop;

  /// Registers `h` under `id`, replacing any handler there; returns *this, for chaining.
  RunOptions& on_active_message(HandlerId id, ActiveMessageHandler h) {
    handlers[id] = std::move(h);
    return *this;
  }
  /// For libraries: registers h under `preferred`, or under the next id above it
  /// that is free, and returns the id, so that two users of one preferred id
  /// (two instances of a library in one job) never replace each other.
  HandlerId add_handler(HandlerId preferred, ActiveMessageHandler h) {
    HandlerId id = preferred;
    while (handlers.count(id)) ++id;
    handlers[id] = std::move(h);
    return id;
  }
};

/// Statistics of the last job, for benchmarks and diagnostics.
struct JobStats {
  std::uint64_t resumes = 0;  ///< process switches
  std::uint64_t slots = 0;  ///< 16-byte ring slots that crossed cores (headers and eager payloads)
  std::uint64_t ring_full = 0;  ///< times a sender found a core-to-core ring full
  /// Times a worker entered the kernel to wait: it slept, was woken, or yielded
  /// its core. Nothing else on a job's path calls the kernel once its pools are warm.
  /// With jobs side by side, a core's calls while this job ran there count for each of them.
  std::uint64_t kernel_calls = 0;
  /// The job's number in this program: 1 for the first job of any Runtime,
  /// then counted up. Errors about a communicator kept past its job name it.
  std::uint64_t job = 0;
  /// Messages that arrived and that no process received before the job ended
  /// (on this node): dropped with the job. See RunOptions::strict.
  std::uint64_t unreceived = 0;
  /// Cores' programs of compiled exchanges that this job compiled; a plan's
  /// later jobs on the same cores take them from the plan instead
  /// (CompiledProgramCache, compiled_exchange.hpp).
  std::uint64_t copy_programs_compiled = 0;
};

/// A job started by Runtime::submit, running on a host thread of its own: it
/// can be waited for, polled and cancelled from any thread. Movable, not
/// copyable. Destroying a handle (or assigning to it) while its job runs
/// cancels the job and waits for it to end, as std::jthread does: wait() for
/// a result that must not be lost. Never wait on it inside a process of the
/// same Runtime: that process's core could not run the job meanwhile.
class JobHandle {
 public:
  JobHandle() = default;  ///< no job
  /// Whether it holds a job whose result wait() has not taken yet.
  bool valid() const noexcept { return result_.valid(); }
  /// Whether the job has ended (wait() returns at once); false once wait() has taken it.
  bool ready() const { return valid() && result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  /// Waits up to `timeout` for the job to end; whether it has (ready()).
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return valid() && result_.wait_for(timeout) == std::future_status::ready;
  }
  /// Waits for the job to end and returns its statistics, or throws what
  /// run() would have thrown (JobCancelled once cancel() stopped it). Once:
  /// the handle is then no longer valid(); an InvalidArgument if it is not.
  JobStats wait();
  /// Asks the job to stop (RunOptions::stop) and returns at once; wait()
  /// then throws JobCancelled, unless the job had ended first.
  void cancel() noexcept { thread_.request_stop(); }

 private:
  friend class Runtime;
  std::future<JobStats> result_;
  std::jthread thread_;  // last: joined (after a stop request) before the result goes
};

/// A job ended with messages that no process received, under RunOptions::strict.
class UnreceivedMessagesError : public Error {
 public:
  using Error::Error;
};

/// The body of every process of a job: a coroutine of the process it runs in.
using ProcessBody = std::function<Task<void>(Process&)>;

/// Ranks [first, end) of a job: those a node hosts (Runtime::local_ranks).
struct RankRange {
  std::uint64_t first = 0,  ///< the first rank
      end = 0;  ///< one past the last rank
};
/// The block of ranks node `node` of `nodes` hosts in a job of `processes`
/// processes: [node*ceil(N/R), (node+1)*ceil(N/R)), cut at N (empty for the last
/// nodes of a job with fewer processes than nodes).
RankRange node_ranks(std::uint64_t processes, std::uint32_t nodes, std::uint32_t node) noexcept;

/// This OS process's node (MPI rank) among the nodes of its jobs, 0 without
/// mpirun: for a program that makes no Runtime yet and lets node 0 alone print.
/// Under mpirun it initialises MPI, as the first Runtime would.
std::uint32_t this_node();

/// What run() throws on every node of a job across nodes but the one where a
/// process failed (or the job stalled): the message names that node and rank,
/// and says what they raised.
class RemoteFailure : public Error {
 public:
  using Error::Error;
};

namespace detail {
class Worker;
class WorkerThread;
class WorkerSets;
class Job;
class NetworkSession;
class NodeStagingPool;
class KeptLibraries;
}  // namespace detail

/// The runtime: a worker thread per core that runs jobs of processes (see the
/// file's description). Not copyable; jobs run side by side on one node.
class Runtime {
 public:
  /// Starts a worker on each core of `options` and, under mpirun, joins the
  /// other nodes. InvalidArgument for a core this process may not use, a core
  /// listed twice, or a realtime priority out of range or refused.
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Runs `processes` software processes, each executing body(process), and
  /// returns when all have finished. If one throws, the others are cancelled and
  /// the first exception is rethrown here. Calling it from inside one of this
  /// runtime's processes is an InvalidArgument (it could never return).
  JobStats run(std::uint64_t processes, const ProcessBody& body, RunOptions options = {});
  /// Starts the same job as run() on a host thread of its own and returns at
  /// once: its handle waits for it, polls it or cancels it (as does
  /// options.stop). Argument errors come from JobHandle::wait(). Across
  /// nodes, jobs start in the order their threads reach run(): submit the
  /// next job there once the last has ended. Every handle must be waited for
  /// or destroyed before its Runtime.
  [[nodiscard]] JobHandle submit(std::uint64_t processes, ProcessBody body, RunOptions options = {});

  /// The OS CPU numbers of this node's workers, in worker order.
  const std::vector<int>& cores() const noexcept { return cores_; }
  /// This node (MPI rank) among the nodes of every job: 0 without mpirun.
  std::uint32_t node() const noexcept { return node_; }
  /// How many nodes every job spans: 1 without mpirun.
  std::uint32_t nodes() const noexcept { return static_cast<std::uint32_t>(node_cores_.size()); }
  /// The ranks this node hosts in a job of `processes` processes (all of them on one node).
  RankRange local_ranks(std::uint64_t processes) const noexcept { return node_ranks(processes, nodes(), node_); }
  /// Element-wise sum of every node's `mine` (of one length on every node),
  /// returned on every node: how a node's results of a job (its processes'
  /// timings, counts) join those of the others. Across nodes a job of its own
  /// (one process per node, allreduce), after the job it combines; on one node
  /// `mine` itself, no job. Every node calls it at the same point.
  std::vector<std::int64_t> sum_over_nodes(std::span<const std::int64_t> mine);
  /// In place, on every node: `sums` element-wise summed and `maxima`
  /// element-wise maximised over the nodes (each of one length on every node),
  /// in one MPI reduction (NodeReduction gathers a row's values for it). On
  /// one node they stay as they are. Every node calls it at the same point,
  /// outside any job.
  void combine_over_nodes(std::span<std::int64_t> sums, std::span<std::int64_t> maxima);
  /// The machine as hwloc sees it.
  const Topology& topology() const noexcept { return *topology_; }
  /// How each worker is bound, one line per worker, read back from the OS.
  std::vector<std::string> worker_bindings() const;

 private:
  std::unique_ptr<Topology> topology_;
  std::vector<int> cores_;
  std::vector<std::unique_ptr<detail::WorkerThread>> threads_;  ///< one per core
  std::unique_ptr<detail::WorkerSets> worker_sets_;  ///< each job's workers on threads_ (after them: gone first)
  std::mutex nodes_mutex_;  ///< jobs across nodes, and combine_over_nodes: one at a time
  TraceLog* default_trace_ = nullptr;
  std::unique_ptr<detail::NetworkSession> network_;  ///< set when jobs span nodes
  /// Calls of run() across nodes, refused ones too (detail::JobRecord::call):
  /// relaxed, as nodes_mutex_ orders the jobs that start and a refused call
  /// only counts.
  std::atomic<std::uint64_t> calls_{0};
  std::uint32_t node_ = 0;
  std::vector<std::vector<int>> node_cores_;  ///< per node: its workers' OS cores
  std::unique_ptr<detail::NodeStagingPool> staging_;  ///< compiled exchanges' buffers between nodes, from job to job
  std::unique_ptr<detail::KeptLibraries> libraries_;  ///< the world's library duplicates, from job to job

  void start_and_watch(detail::Job& job, const std::vector<detail::Worker*>& workers);
  void watch_network(detail::Job& job, std::optional<std::chrono::steady_clock::time_point>& cancelled_at,
                     std::chrono::steady_clock::time_point now);
};

}  // namespace switchyard
