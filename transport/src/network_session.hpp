#pragma once
// The runtime's seam towards other nodes, as HPX's parcelports are its: the
// runtime holds a NetworkSession (one per Runtime), a NetworkJob per job
// across nodes, and a NetworkTransport per worker (network_transport.hpp),
// and never the implementation behind them. The one there is, over MPI, is
// switchyard::transport_mpi (transport/mpi/): a program that links it gets
// its open_network_session(); one that does not gets a weak stand-in
// (no_mpi.cpp) under which every job is one node.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace switchyard::detail {

class NetworkTransport;

// One job across nodes, as this node sees it: its failure announcements, and
// the end of the job, which this node's workers reach together through their
// NetworkTransport::end_job(). Made by NetworkSession::begin_job; lives as
// long as the job. Its calls come from any thread of the job (the watchdog,
// the workers), and are safe from all of them at once.
class NetworkJob {
 public:
  virtual ~NetworkJob() = default;
  // A part of the job failed on this node: tells every other node, which
  // receives it through failure_from_others() (text: what to tell them; empty:
  // cancel now, the failure follows once known). A node that announced ends
  // its part of the job only once every other node has received it.
  virtual void announce_failure(const std::string& text) = 0;
  // A failure another node announced for this job, if one has come (never
  // blocks; each announcement once, a cancellation before the failure that
  // caused it). Called while the job lasts, cancelled or not, so that
  // announcements are always received.
  virtual std::optional<std::string> failure_from_others() = 0;
  // Every worker of this node has drained: this node's processes have all
  // finished and none of its traffic with other nodes is outstanding; what is
  // left is waiting for the other nodes (not a stall of this node's).
  virtual bool drained() const noexcept = 0;
  // The job is over on every node: no node sends anything more in it.
  virtual bool finished() const noexcept = 0;
};

// This program's connection to the other nodes, for one Runtime.
class NetworkSession {
 public:
  virtual ~NetworkSession() = default;
  // This node, and how many nodes every job spans (more than 1).
  virtual std::uint32_t node() const noexcept = 0;
  virtual std::uint32_t nodes() const noexcept = 0;
  // Collective over every node, blocking, from one thread of each: every
  // node's list, by node.
  virtual std::vector<std::vector<int>> allgather(const std::vector<int>& mine) = 0;
  // Collective over every node, blocking, outside any job: `sums` summed and
  // `maxima` maximised element-wise over the nodes, in place (each of one
  // length on every node).
  virtual void combine(std::span<std::int64_t> sums, std::span<std::int64_t> maxima) = 0;
  // Before a job starts, collective over every node, from one thread of
  // each: every node's `mine` (its record of the job, of one length on every
  // node), concatenated by node; nothing if some node has not joined within
  // `timeout` (it runs other jobs, or none: the collective cannot be taken
  // back, and the caller ends the program).
  virtual std::optional<std::vector<std::byte>> agree_on_job(std::span<const std::byte> mine,
                                                             std::chrono::milliseconds timeout) = 0;
  // A job starting across the nodes, with `workers` workers on this node.
  // Jobs start in the same order on every node, one at a time (each ends on
  // every node before the next begins). wake_workers rings every worker of
  // the job: called once the job is over on every node, so that sleeping
  // workers see finished().
  virtual std::unique_ptr<NetworkJob> begin_job(std::uint32_t workers, std::function<void()> wake_workers) = 0;
  // A worker's transport towards the cores of other nodes, attached to each
  // job the worker runs across nodes (kept from job to job).
  virtual std::unique_ptr<NetworkTransport> make_transport() = 0;
  // Ends the program on every node with `code`: the last resort for a
  // cancelled job whose traffic with other nodes cannot finish.
  [[noreturn]] virtual void abort(int code) noexcept = 0;
};

// The factory: a session for a new Runtime, or nullptr when every job is one
// node (the program does not link switchyard::transport_mpi, was not started
// by mpirun, or runs on one node). Collective over the nodes: every node
// makes its Runtimes in the same order.
std::unique_ptr<NetworkSession> open_network_session();
// This program's node: 0 when every job is one node.
std::uint32_t network_node();

}  // namespace switchyard::detail
