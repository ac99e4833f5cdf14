#include "job.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "switchyard/detail/frame_cache.hpp"
#include "switchyard/trace.hpp"
#include "worker.hpp"

namespace switchyard {

namespace detail {

namespace {

// Jobs begun, over every Runtime of the program: each job's serial. Relaxed: a
// serial only has to be unique; nothing is published with it.
std::atomic<std::uint64_t> jobs_begun{0};

// running_job set for a scope of this thread, and restored on the way out.
class RunningJobScope {
 public:
  explicit RunningJobScope(std::uint64_t serial) noexcept : outer_(std::exchange(running_job, serial)) {}
  ~RunningJobScope() { running_job = outer_; }
  RunningJobScope(const RunningJobScope&) = delete;
  RunningJobScope& operator=(const RunningJobScope&) = delete;

 private:
  std::uint64_t outer_;
};

}  // namespace

RouteTable route_job(std::uint64_t processes, const Placement& placement, const std::vector<std::vector<int>>& cores) {
  const std::uint64_t nodes = cores.size();
  std::vector<std::uint32_t> cores_per_node;
  for (const auto& c : cores) cores_per_node.push_back(static_cast<std::uint32_t>(c.size()));
  if (nodes == 1) return RouteTable(placement.assign(processes, cores[0]), cores_per_node[0]);
  std::vector<std::uint32_t> node_of(processes), core_of(processes);
  for (std::uint32_t k = 0; k < nodes; ++k) {
    const auto [first, end] = node_ranks(processes, static_cast<std::uint32_t>(nodes), k);
    const std::uint64_t count = end - first;
    const std::vector<std::uint32_t> here = placement.slice(first, count, processes).assign(count, cores[k]);
    for (std::uint64_t i = 0; i < count; ++i) {
      node_of[first + i] = static_cast<std::uint32_t>(k);
      core_of[first + i] = here[i];
    }
  }
  return RouteTable(node_of, core_of, cores_per_node);
}

Job::Job(std::vector<Worker*> workers, RingSet& rings, std::uint64_t processes, const ProcessBody& body,
         RunOptions options, JobNodes nodes)
    : serial_(jobs_begun.fetch_add(1, std::memory_order_relaxed) + 1),
      options_(std::move(options)),
      workers_(std::move(workers)),
      nodes_(std::move(nodes)),
      network_(nodes_.session ? nodes_.session->begin_job(static_cast<std::uint32_t>(workers_.size()),
                                                          [this] { wake_all_workers(); })
                              : nullptr),
      rings_(&rings) {
  SWITCHYARD_ASSERT(rings.cores() == workers_.size() && rings.reusable(options_.ring_capacity));
  const auto w = static_cast<std::uint32_t>(workers_.size());
  routes_ = route_job(processes, options_.placement, nodes_.cores);
  create_local_processes();
  groups_ = std::make_unique<GroupRegistry>(*this);
  if (nodes_.libraries) groups_->make_libraries(nodes_.libraries->chains());
  for (auto& p : processes_) p->world_ = &groups_->world();
  if (options_.trace) {
    for (Worker* worker : workers_) trace_buffers_.push_back(&options_.trace->buffer(worker->os_core(), w));
    for (auto& p : processes_) {
      p->trace_ = trace_buffers_[routes_[p->rank()].core];
      options_.trace->add_track(workers_[routes_[p->rank()].core]->os_core(), p->rank());
    }
  }
  remaining.store(processes_.size(), std::memory_order_relaxed);
  workers_inside.store(w, std::memory_order_relaxed);
  // A body that is not a coroutine may call its process before returning the task.
  const RunningJobScope in_job(serial_);
  for (auto& p : processes_) {
    const FrameCache::LaneScope lane(
        FrameCache::lane_of_core(routes_[p->rank()].core));  // create_local_processes says why
    p->main_ = body(*p);
    // Resuming it would jump through a null handle.
    if (!p->main_.handle()) {
      throw InvalidArgument("switchyard: run: the process body returned an empty Task for rank " +
                            std::to_string(p->rank()) + " (default-made or moved from)");
    }
  }
}

// The Process objects of this node's ranks (all of them on one node), each
// in its core's lane of the FrameCache, as their frames are made in the
// constructor: pages of the core's own. Made from one list, the processes of
// a placement that alternates cores (round robin) sat side by side with the
// other core's, and the hardware prefetchers, which fetch a line's
// neighbours with it, took lines from the core that was writing them on every
// switch (docs/benchmarks.md, "Each core's processes on pages of its own").
void Job::create_local_processes() {
  local_.resize(workers_.size());
  by_rank_.assign(routes_.size(), nullptr);
  for (Rank r = 0; r < routes_.size(); ++r) {
    const Route& route = routes_[r];
    if (route.node != nodes_.node) continue;
    const FrameCache::LaneScope lane(FrameCache::lane_of_core(route.core));
    processes_.emplace_back(new Process(*this, *workers_[route.core], r));
    by_rank_[r] = processes_.back().get();
    local_[route.core].push_back(processes_.back().get());
  }
}

Job::~Job() {
  // Frames first: tickets in them hand their states back to their processes' pools.
  // Frames and processes go back to this thread's FrameCache lists in the
  // reverse of the order they were made in (processes_ is reversed here and
  // destroyed after this body), so that the next job, popping those LIFO
  // lists, lays its ranks out as this one did: in rank order, ascending. Freed
  // in rank order, every other job found them descending, and a lockstep
  // ring shift of 64 processes took almost half as long again in those jobs.
  for (auto p = processes_.rbegin(); p != processes_.rend(); ++p) (*p)->main_ = Task<void>{};
  std::reverse(processes_.begin(), processes_.end());
}

void Job::wake_all_workers() {
  for (Worker* w : workers_) w->doorbell().ring();
}

void Job::fail(std::exception_ptr error, Rank rank) {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    if (!first_error_) first_error_ = error, first = true;
  }
  if (first && network_) {
    std::string what = "an exception that is not a std::exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::string text = "switchyard: node " + std::to_string(nodes_.node) + " failed";
    if (rank != kAnySource) text += " (rank " + std::to_string(rank) + ")";
    network_->announce_failure(text + ": " + what);
  }
  cancel();
}

void Job::fail_remotely(const std::string& text) {
  {
    std::lock_guard lock(mutex_);
    if (!first_error_) first_error_ = std::make_exception_ptr(RemoteFailure(text));
  }
  cancel();
}

void Job::stop_from_outside() {
  // Acquire: pairs with the workers' acq_rel decrements; a job whose processes
  // have all finished keeps its outcome (a stop racing with the last one may go either way).
  if (remaining.load(std::memory_order_acquire) == 0) return;
  fail(std::make_exception_ptr(JobCancelled("switchyard: job " + std::to_string(serial_) +
                                            " was stopped from outside (RunOptions::stop or JobHandle::cancel)")));
}

void Job::cancel() {
  cancelled.store(true, std::memory_order_release);
  wake_all_workers();
}

void Job::cancel_everywhere() {
  if (network_ && !cancel_announced_.exchange(true, std::memory_order_relaxed)) network_->announce_failure("");
  cancel();
}

void Job::stall() {
  stalled_.store(true, std::memory_order_release);
  if (network_) {
    network_->announce_failure("switchyard: node " + std::to_string(nodes_.node) +
                               " stalled (its processes are named in its own error)");
  }
  cancel();
}

void Job::not_yielding(Rank rank, int core, std::chrono::steady_clock::duration running) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(running).count();
  std::string line = "rank " + std::to_string(rank) + " (core " + std::to_string(core) + ") is running: for " +
                     std::to_string(ms) + " ms without yielding; the job fails when it next waits or yields";
  std::fprintf(stderr, "switchyard: stall timeout: %s\n", line.c_str());
  {
    std::lock_guard lock(mutex_);
    stall_cause_ = "a process did not yield for " + std::to_string(options_.stall_timeout.count()) + " ms";
    report_.insert_or_assign(rank, StallLine{true, std::move(line)});
  }
  stall();
}

void Job::set_stall_cause(std::string cause) {
  std::lock_guard lock(mutex_);
  stall_cause_ = std::move(cause);
}

void Job::add_stall_report(Rank r, std::string line) {
  std::lock_guard lock(mutex_);
  report_.try_emplace(r, StallLine{false, std::move(line)});
}

std::exception_ptr Job::error() const {
  std::lock_guard lock(mutex_);
  return first_error_;
}

std::string Job::stall_report() const {
  std::lock_guard lock(mutex_);
  const auto running = static_cast<std::size_t>(
      std::count_if(report_.begin(), report_.end(), [](const auto& line) { return line.second.running; }));
  std::ostringstream out;
  out << "switchyard: job stalled: ";
  if (stall_cause_.empty()) {
    out << "no process made progress for " << options_.stall_timeout.count() << " ms";
  } else {
    out << stall_cause_;
  }
  out << "; " << report_.size() << " process(es) ";
  if (running)
    out << "stalled, " << running << " running and " << report_.size() - running << " blocked";
  else
    out << "blocked";
  out << ":";
  for (const auto& [r, line] : report_) out << "\n  " << line.text;
  return out.str();
}

}  // namespace detail

}  // namespace switchyard
