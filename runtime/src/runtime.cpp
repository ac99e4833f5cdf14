#include "switchyard/runtime.hpp"

#include <sched.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "job.hpp"
#include "job_agreement.hpp"
#include "job_trace.hpp"
#include "kept_libraries.hpp"
#include "node_staging_pool.hpp"
#include "switchyard/machine_memory.hpp"
#include "switchyard/trace.hpp"
#include "worker.hpp"
#include "worker_thread.hpp"

namespace switchyard {

RankRange node_ranks(std::uint64_t processes, std::uint32_t nodes, std::uint32_t node) noexcept {
  const std::uint64_t per = (processes + nodes - 1) / nodes;
  const std::uint64_t first = std::min(processes, node * per);
  return {first, std::min(processes, first + per)};
}

std::uint32_t this_node() { return detail::network_node(); }

Runtime::Runtime(RuntimeOptions options)
    : topology_(std::make_unique<Topology>()),
      default_trace_(options.trace),
      staging_(std::make_unique<detail::NodeStagingPool>()),
      libraries_(std::make_unique<detail::KeptLibraries>()) {
  if (options.cores.empty()) {
    for (const auto& c : topology_->allowed_cores()) cores_.push_back(c.os_index);
  } else {
    for (int core : options.cores) {
      if (!topology_->find(core)) {
        std::string allowed;
        for (const auto& c : topology_->allowed_cores()) {
          if (!allowed.empty()) allowed += ',';
          allowed += std::to_string(c.os_index);
        }
        throw InvalidArgument("switchyard: core " + std::to_string(core) +
                              " is not one this process may run on (usable cores: " + allowed + ")");
      }
      if (std::find(cores_.begin(), cores_.end(), core) != cores_.end()) {
        throw InvalidArgument("switchyard: core " + std::to_string(core) + " is listed twice");
      }
      cores_.push_back(core);
    }
  }
  if (options.realtime_priority < 0 || options.realtime_priority > sched_get_priority_max(SCHED_FIFO)) {
    throw InvalidArgument("switchyard: RuntimeOptions::realtime_priority " + std::to_string(options.realtime_priority) +
                          " is outside 0.." + std::to_string(sched_get_priority_max(SCHED_FIFO)));
  }
  for (std::size_t i = 0; i < cores_.size(); ++i) {
    threads_.push_back(std::make_unique<detail::WorkerThread>(static_cast<std::uint32_t>(i), cores_[i], *topology_,
                                                              options.bind, options.realtime_priority));
  }
  worker_sets_ = std::make_unique<detail::WorkerSets>(threads_);
  for (auto& w : threads_) w->wait_started();  // worker_bindings() then reports the binding, not the inherited mask
  for (auto& w : threads_) {
    if (!w->realtime_granted()) {
      throw InvalidArgument("switchyard: RuntimeOptions::realtime_priority " +
                            std::to_string(options.realtime_priority) +
                            ": the OS refused SCHED_FIFO to the workers (it needs CAP_SYS_NICE or an RLIMIT_RTPRIO "
                            "of at least that priority)");
    }
  }
  network_ = detail::open_network_session();
  if (network_) {
    node_ = network_->node();
    node_cores_ = network_->allgather(cores_);
  } else {
    node_cores_ = {cores_};
  }
}

Runtime::~Runtime() = default;

std::vector<std::int64_t> Runtime::sum_over_nodes(std::span<const std::int64_t> mine) {
  std::vector<std::int64_t> sum(mine.begin(), mine.end());
  combine_over_nodes(sum, {});
  return sum;
}

void Runtime::combine_over_nodes(std::span<std::int64_t> sums, std::span<std::int64_t> maxima) {
  if (nodes() == 1) return;
  // From the calling thread, on the Runtime's session: no job, so no
  // threads woken and no end-of-job barrier for a handful of numbers.
  std::lock_guard lock(nodes_mutex_);
  network_->combine(sums, maxima);
}

std::vector<std::string> Runtime::worker_bindings() const {
  std::vector<std::string> out;
  for (const auto& w : threads_) out.push_back(w->binding());
  return out;
}

namespace {

std::string message_text(Rank src, Rank dst, std::uint64_t size, Tag tag, ContextId context) {
  return "rank " + std::to_string(src) + " to rank " + std::to_string(dst) + ", " + std::to_string(size) +
         " bytes, tag " + std::to_string(tag) +
         (context == 0 ? std::string() : " on communicator " + std::to_string(context));
}

// The messages (and active messages) a job left between two cores of this
// node: in a ring, or staged by their sender for one, when it ended. A
// receiver's core that left the job before its sender's last flush never saw
// them in its mailbox.
class UntakenMessages final : public detail::ArrivalSink {
 public:
  void arrived(const detail::WireHeader& h, std::span<const std::byte>) override {
    using detail::WireKind;
    if (h.kind != WireKind::kEager && h.kind != WireKind::kRendezvous && h.kind != WireKind::kActive) return;
    if (count++ == 0) first = message_text(h.src, h.dst, h.size, h.tag, h.context);
  }
  std::uint64_t count = 0;
  std::string first;
};

// Once every worker has left the job: what it left between each pair of cores.
UntakenMessages untaken_messages(detail::Job& job, const std::vector<detail::Worker*>& workers) {
  UntakenMessages untaken;
  const auto cores = static_cast<std::uint32_t>(workers.size());
  for (std::uint32_t from = 0; from < cores; ++from) {
    for (std::uint32_t to = 0; to < cores; ++to) {
      if (from == to) continue;
      detail::SharedMemoryTransport::hand_over_untaken(workers[from]->transport(), workers[to]->transport(),
                                                       job.rings().ring(from, to), untaken);
    }
  }
  return untaken;
}

// The messages the job's processes never received (in a mailbox, a ring or a
// sender's staging), counted into `count`, and what run() says about them
// ("" when there are none).
std::string unreceived_report(detail::Job& job, const std::vector<detail::Worker*>& workers, std::uint64_t& count) {
  std::string first;
  for (std::uint32_t w = 0; w < workers.size(); ++w) {
    const detail::UnreceivedMessages& u = workers[w]->unreceived();
    if (u.count == 0) continue;
    if (count == 0) first = message_text(u.src, job.local_processes(w)[u.receiver]->rank(), u.size, u.tag, u.context);
    count += u.count;
  }
  const UntakenMessages untaken = untaken_messages(job, workers);
  if (count == 0) first = untaken.first;
  count += untaken.count;
  if (count == 0) return {};
  std::string where = job.network() ? " on node " + std::to_string(job.node()) : "";
  return "switchyard: job " + std::to_string(job.serial()) + " ended with " + std::to_string(count) +
         " message(s) that no process received" + where + ", dropped with it (the first: " + first + ")";
}

// Every node runs the same job (job_agreement.hpp): alike on every node, or
// every node throws, naming each node's; the nodes then count their calls of
// run() on from the largest count (`calls`), so that a program that goes on
// after the error pairs its next jobs again. A node that does not start a job
// within the stall timeout ends the program on every node: the collective it
// left open cannot be taken back.
void check_nodes_agree(detail::NetworkSession& network, const detail::JobRecord& mine,
                       std::chrono::milliseconds timeout, std::atomic<std::uint64_t>& calls) {
  const std::optional<std::vector<std::byte>> all = network.agree_on_job(std::as_bytes(std::span(&mine, 1)), timeout);
  if (!all) {
    std::fprintf(stderr,
                 "switchyard: node %u starts a job of %llu processes; some node has not started one within %lld ms "
                 "(every node runs the same jobs, in the same order): aborting every node (MPI_Abort)\n",
                 network.node(), static_cast<unsigned long long>(mine.processes),
                 static_cast<long long>(timeout.count()));
    network.abort(1);
  }
  std::vector<detail::JobRecord> records(network.nodes());
  std::memcpy(records.data(), all->data(), all->size());
  const std::string text = detail::job_disagreement(records);
  if (text.empty()) return;
  for (const detail::JobRecord& r : records) {
    if (r.call > calls.load(std::memory_order_relaxed)) calls.store(r.call, std::memory_order_relaxed);
  }
  throw InvalidArgument(text);
}

}  // namespace

// Starts the job's workers, then watches it from the thread that called run,
// until every worker has left the job.
// - Stalled: no worker resumed a process and none is running one for a whole
//   stall timeout. Every worker then names its blocked processes.
// - Not yielding: one resume has lasted a whole stall timeout. A coroutine is
//   never pre-empted, so the job cannot fail before that process yields; the
//   diagnostic goes to stderr at once (the program may never return), and the
//   job is stalled so that it fails with it the moment the process yields.
// A job with a process asleep until a deadline is waiting for it, not stalled:
// the deadline will come, whatever the others wait for.
void Runtime::start_and_watch(detail::Job& job, const std::vector<detail::Worker*>& workers) {
  const auto timeout = job.options().stall_timeout;
  const auto poll =
      std::clamp<std::chrono::milliseconds>(timeout / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(250));
  std::uint64_t last_total = ~std::uint64_t{0};
  auto last_change = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> resume_seen(workers.size(), 0);  // an odd progress value: one resume
  std::vector<std::chrono::steady_clock::time_point> resume_since(workers.size());
  // Started only now: the job allocates nothing the watchdog does not, so a
  // job's own count of allocations (tests of allocation-free runs) is its own.
  for (auto* w : workers) w->start(&job);
  std::optional<std::chrono::steady_clock::time_point> cancelled_at;
  while (!job.left.try_acquire_for(poll)) {
    const auto now = std::chrono::steady_clock::now();
    if (job.network()) watch_network(job, cancelled_at, now);
    std::uint64_t total = 0;
    bool running = false;
    for (std::size_t w = 0; w < workers.size(); ++w) {
      const std::uint64_t p = workers[w]->progress();
      total += p;
      if (workers[w]->sleepers() > 0) running = true;
      if ((p & 1) == 0) continue;
      running = true;
      if (p != resume_seen[w]) {
        resume_seen[w] = p;
        resume_since[w] = now;
      } else if (now - resume_since[w] >= timeout && !job.cancelled.load(std::memory_order_acquire)) {
        job.not_yielding(workers[w]->running_rank(), workers[w]->os_core(), now - resume_since[w]);
      }
    }
    // A node whose processes have all finished and whose messages to other
    // nodes have all been taken waits for the other nodes (NetworkJob::drained):
    // not a stall of its own; theirs, they report. One whose messages are
    // not taken for a whole timeout (their receivers finished without
    // receiving them) is stalled, and says so.
    const bool finished = job.remaining.load(std::memory_order_acquire) == 0;
    if (finished && job.network() && job.network()->drained()) running = true;
    if (total != last_total || running) {
      last_total = total;
      last_change = now;
    } else if (now - last_change >= timeout && !job.cancelled.load(std::memory_order_acquire)) {
      if (finished) {
        job.set_stall_cause(job.network()
                                ? "every process of this node finished, but messages they sent to other nodes "
                                  "were not received (their receivers finished without receiving them)"
                                : "every process finished, but active messages kept the job going for the whole "
                                  "timeout (handlers that post more active messages)");
      }
      job.stall();
    }
  }
}

// A job across nodes: another node's failure cancels this node's part. A
// cancelled part whose workers cannot finish their MPI traffic within
// kCancelGrace (a peer that stopped receiving, a payload nobody will take)
// ends every node with MPI_Abort: the last resort, rather than a hang.
void Runtime::watch_network(detail::Job& job, std::optional<std::chrono::steady_clock::time_point>& cancelled_at,
                            std::chrono::steady_clock::time_point now) {
  constexpr auto kCancelGrace = std::chrono::seconds(3);
  // Received whether or not this node's part is cancelled already: the node
  // that sent it waits until it has been (NetworkJob::announce_failure).
  // A cancellation ("") first, then the failure: the failure is this node's
  // error unless it has one of its own (fail_remotely keeps the first) or stalled.
  if (auto text = job.network()->failure_from_others()) {
    if (text->empty()) {
      job.cancel();
    } else if (!job.stalled()) {
      job.fail_remotely(*text);
    }
  }
  if (!job.cancelled.load(std::memory_order_acquire)) return;
  if (!cancelled_at) cancelled_at = now;
  if (now - *cancelled_at < kCancelGrace) return;
  std::fprintf(stderr,
               "switchyard: node %u: the cancelled job could not finish its traffic with the other nodes in %lld s; "
               "aborting every node (MPI_Abort)\n",
               node_, static_cast<long long>(kCancelGrace.count()));
  // A stalled node's part: the processes it names are why the job could not finish.
  if (job.stalled()) std::fprintf(stderr, "%s\n", job.stall_report().c_str());  // "switchyard: job stalled: ..."
  if (auto error = job.error()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "switchyard: node %u: the job failed with: %s\n", node_, e.what());
    } catch (...) {
    }
  }
  network_->abort(1);
}

namespace {

// What run() refuses before a job starts (InvalidArgument), `workers` the Runtime's.
void check_run_arguments(std::uint64_t processes, const ProcessBody& body, const RunOptions& options,
                         const std::vector<std::unique_ptr<detail::WorkerThread>>& workers) {
  if (processes == 0) throw InvalidArgument("switchyard: run needs at least one process");
  if (processes >= kAnySource) {
    throw InvalidArgument("switchyard: run: " + std::to_string(processes) +
                          " processes is more than a rank can number");
  }
  // What the runtime holds per process (its Process, its first frame, its
  // route, its mailbox): about 480 bytes, from the peak RSS of 10^7 processes
  // that return at once (4.7 GB). More than the machine allows is refused.
  constexpr double kBytesPerProcess = 480;
  const MemoryLimit memory = memory_limit();  // two system calls: asked once, for both checks
  if (const std::string why = memory_shortfall(static_cast<double>(processes) * kBytesPerProcess, memory);
      !why.empty()) {
    throw InvalidArgument("switchyard: run: " + std::to_string(processes) + " processes (480 bytes each) " + why);
  }
  if (!body) throw InvalidArgument("switchyard: run: the process body is empty");
  if (options.ring_capacity == 0 || options.ring_capacity > (std::size_t{1} << 24)) {
    throw InvalidArgument("switchyard: run: ring_capacity must be between 1 and 16777216 packets, not " +
                          std::to_string(options.ring_capacity));
  }
  // A ring of ring_capacity cache lines for every ordered pair of this node's cores.
  const double cores = static_cast<double>(workers.size());
  const double rings = cores * (cores - 1);
  if (const std::string why = memory_shortfall(rings * static_cast<double>(options.ring_capacity) * kCacheLine, memory);
      !why.empty()) {
    throw InvalidArgument("switchyard: run: ring_capacity " + std::to_string(options.ring_capacity) + " (" +
                          std::to_string(static_cast<std::uint64_t>(rings)) + " rings of that many 64-byte lines, " +
                          "one for each ordered pair of " + std::to_string(workers.size()) + " cores) " + why);
  }
  if (options.eager_limit > (std::uint64_t{1} << 20)) {
    throw InvalidArgument("switchyard: run: eager_limit must be at most 1 MiB, not " +
                          std::to_string(options.eager_limit));
  }
  if (options.network_eager_limit > (std::uint64_t{1} << 20)) {
    throw InvalidArgument("switchyard: run: network_eager_limit must be at most 1 MiB, not " +
                          std::to_string(options.network_eager_limit));
  }
  if (options.stall_timeout.count() <= 0) throw InvalidArgument("switchyard: run: stall_timeout must be positive");
  for (const auto& [id, handler] : options.handlers) {
    if (!handler) throw InvalidArgument("switchyard: run: active-message handler " + std::to_string(id) + " is empty");
  }

  for (const auto& w : workers) {
    if (w->thread_id() == std::this_thread::get_id()) {
      // The outer job waits for this very worker thread, which would wait for the inner job: it would never return.
      throw InvalidArgument("switchyard: run called from inside a process of the same Runtime (worker " +
                            std::to_string(w->index()) + ", core " + std::to_string(w->os_core()) +
                            "): a job cannot start another on its own workers; use a second Runtime or "
                            "communicators (split) inside the job");
    }
  }
}

}  // namespace

JobStats Runtime::run(std::uint64_t processes, const ProcessBody& body, RunOptions options) {
  try {
    check_run_arguments(processes, body, options, threads_);
  } catch (const InvalidArgument&) {
    // Counted all the same: a call refused on one node alone leaves the
    // others waiting at its start, and its next call tells them (JobRecord::call).
    if (network_) calls_.fetch_add(1, std::memory_order_relaxed);
    throw;
  }
  // Jobs across nodes run one at a time, so that every node pairs the same
  // calls of run() (job_agreement.hpp); jobs of one node run side by side.
  std::unique_lock nodes_lock(nodes_mutex_, std::defer_lock);
  if (network_) {
    nodes_lock.lock();
    const std::uint64_t call = calls_.fetch_add(1, std::memory_order_relaxed) + 1;
    check_nodes_agree(*network_, detail::job_record(call, processes, body, options), options.stall_timeout, calls_);
  }
  detail::JobTrace trace(options, default_trace_);
  detail::WorkerSets::Borrowed borrowed(*worker_sets_);
  const std::vector<detail::Worker*>& workers = borrowed.workers();
  JobStats stats;
  std::exception_ptr error;
  std::string stall_report, unreceived;
  const bool strict = options.strict;
  const std::stop_token stop_token = options.stop;
  {
    detail::Job job(workers, borrowed.rings(options.ring_capacity), processes, body, std::move(options),
                    detail::JobNodes{network_.get(), node_, node_cores_, staging_.get(), libraries_.get()});
    // Runs here at once if the stop was requested already; destroyed (after
    // waiting for a callback running elsewhere) before the job.
    const std::stop_callback stop(stop_token, [&job] { job.stop_from_outside(); });
    start_and_watch(job, workers);
    libraries_->keep(job.groups().library_chains());
    for (auto* w : workers) {
      stats.resumes += w->resumes();
      stats.slots += w->transport_stats().slots_received;
      stats.ring_full += w->transport_stats().ring_full;
      stats.kernel_calls += w->kernel_calls();
    }
    stats.job = job.serial();
    stats.copy_programs_compiled = job.copy_programs_compiled.load(std::memory_order_relaxed);
    unreceived = unreceived_report(job, workers, stats.unreceived);
    error = job.error();
    if (job.stalled()) stall_report = job.stall_report();
    trace.job_over();
  }
  staging_->end_job();  // the job's exchanges, and their staging, are gone
  trace.write_file();
  if (error) std::rethrow_exception(error);
  if (!stall_report.empty()) throw StallError(stall_report);
  if (!unreceived.empty()) {
    if (strict) throw UnreceivedMessagesError(unreceived);
    std::fprintf(stderr, "%s (RunOptions::strict makes this an error)\n", unreceived.c_str());
  }
  return stats;
}

JobHandle Runtime::submit(std::uint64_t processes, ProcessBody body, RunOptions options) {
  JobHandle handle;
  std::promise<JobStats> result;
  handle.result_ = result.get_future();
  handle.thread_ = std::jthread([this, processes, body = std::move(body), options = std::move(options),
                                 result = std::move(result)](std::stop_token by_handle) mutable {
    // The job stops on either request: the handle's or the caller's own token.
    std::stop_source either;
    const std::stop_callback from_handle(by_handle, [&either] { either.request_stop(); });
    const std::stop_callback from_options(options.stop, [&either] { either.request_stop(); });
    options.stop = either.get_token();
    try {
      result.set_value(run(processes, body, std::move(options)));
    } catch (...) {
      result.set_exception(std::current_exception());
    }
  });
  return handle;
}

JobStats JobHandle::wait() {
  if (!result_.valid())
    throw InvalidArgument(
        "switchyard: JobHandle::wait: the handle holds no job (made empty, moved from, or waited for already)");
  // The job's thread ends right after it sets the result. Joined first, it
  // has let go of its share of the result (and of what the job threw) before
  // this thread takes it: the last owner of a thrown error is the one that
  // catches it, with nothing left to race with its destruction.
  result_.wait();
  if (thread_.joinable()) thread_.join();
  return result_.get();
}

}  // namespace switchyard
