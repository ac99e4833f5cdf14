#pragma once
// The transport between nodes: one node per MPI rank, over Open MPI (or any
// MPI with MPI_THREAD_MULTIPLE). Private to switchyard::transport_mpi, which
// implements the runtime's interfaces (network_session.hpp,
// network_transport.hpp) with it: MpiSession and MpiJob (mpi_session.cpp),
// MpiTransport (mpi_transport.cpp).
//
// Threads. Every worker drives MPI itself, from its own loop (hence
// MPI_THREAD_MULTIPLE): it issues its sends, tests its own requests and probes
// for the packets addressed to its core. No progress thread: a funnelled one
// would add a hand-over between threads to every message in each direction.
// A worker with requests outstanding (or with nothing at all to do, in a job
// that spans nodes) sleeps a bounded time instead of until its doorbell rings,
// because nothing rings a doorbell when MPI has progress to make.
//
// Layout on the wire. Three duplicates of MPI_COMM_WORLD keep three kinds of
// traffic apart, so that no tag of one can match another:
//  * packets: the batches of packets (wire.hpp) from one core to one core of
//    another node, tagged with the destination core and the job's parity. (A
//    node may start the next job, and send in it, while another still takes
//    in the last packets of this one, its receives still posted: the parity
//    keeps them apart. The node cannot be two jobs ahead: each job ends with
//    a barrier over the nodes, which a node joins only once its receives of
//    the job before are gone. This holds only if consecutive jobs have
//    consecutive numbers over the whole session, whoever runs them: hence
//    MpiWorld::begin_job(). Two Runtimes that counted their own jobs gave
//    jobs in turn the same number, and a receive still posted for one took
//    the first batch of the next, which its receiver then never saw.) MPI keeps the order of
//    messages between two ranks with one tag, and one sending core issues its
//    batches towards a core in order, so packets of one process to another
//    arrive in the order they were posted. A batch is sent with MPI_Isend
//    (no handshake; an MPI_Issend costs an acknowledgement back per batch)
//    into receives the destination core pre-posted (no probe).
//    Its first slot, the
//    BatchHeader, names the sending core and carries a credit: how many slots
//    the sending core has taken so far from the batch's destination core.
//    That is the flow control: a core issues packets towards a core only
//    while fewer than the window's slots it sent are uncredited, so MPI
//    buffers a bounded amount. Credits ride on the batches going back; a core
//    that has nothing to send back sends a header-only batch once half a
//    window is uncredited (at once when its node's processes have finished,
//    so that every sender learns everything was taken before the end-of-job
//    barrier).
//  * payloads: the payload of a rendezvous message, tagged (sending core,
//    request id). One MPI_Issend from the sender's buffer, one MPI_Irecv into
//    the receive's buffer once the receive has matched the rendezvous header.
//    Issend (not Isend) because the request id comes back into use once the
//    send completes: completing only once matched, no two unmatched payloads
//    of one core ever carry the same tag. It also gives a send the meaning it
//    has on one node: complete once the receiver has taken the message.
//  * control: job failures and the end-of-job barrier.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "network_session.hpp"
#include "network_transport.hpp"

namespace switchyard::detail {

// This OS process's MPI session: one per process, made on first use, kept
// until exit.
class MpiWorld {
 public:
  // The session, or nullptr when the program was neither started by mpirun
  // nor initialised MPI itself. A program that
  // initialised MPI must have asked for MPI_THREAD_MULTIPLE (Error otherwise)
  // and keeps finalising it; otherwise switchyard initialises MPI here and
  // finalises it at exit.
  static MpiWorld* instance();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  std::uint32_t node() const noexcept { return node_; }
  std::uint32_t nodes() const noexcept { return nodes_; }
  // The number of a job starting across the nodes: 0, 1, 2, ... over the
  // whole session, whichever Runtime (or test driving a NetworkTransport by
  // hand) runs it (MpiJob's). Every user of the nodes' communicators takes its job's
  // number here, so that no two jobs of a session have the same one: the
  // packets' tags (the job's parity) and the failure announcements rely on
  // it. Alike on every node, as jobs across nodes start in the same order on
  // every node (one at a time, each ending with a barrier over the nodes).
  std::uint64_t begin_job() noexcept;
  // Collective over every node, from one thread of each: every node's list, by node.
  std::vector<std::vector<int>> allgather(const std::vector<int>& mine) const;

  // A job failed here: tells every other node (text: what to tell them; empty:
  // cancel now, the failure follows once known).
  void announce_failure(std::uint64_t job, const std::string& text);
  // Whether every node has received what announce_failure() sent it: a node
  // that failed ends its part of the job only then, so that the others learn
  // why before the end-of-job barrier lets them return.
  bool failures_delivered();
  // A failure another node announced for `job`, if one has come (never blocks).
  // Called while the job lasts, cancelled or not, so that announcements are
  // always received.
  std::optional<std::string> failure_from_others(std::uint64_t job);

  // The end-of-job barrier, non-blocking: started once, then tested.
  void start_barrier();
  bool barrier_done();

  [[noreturn]] void abort(int code) const noexcept;

  struct Impl;
  Impl& impl() noexcept { return *impl_; }

 private:
  MpiWorld(std::unique_ptr<Impl> impl, std::uint32_t node, std::uint32_t nodes);
  std::unique_ptr<Impl> impl_;
  std::uint32_t node_ = 0, nodes_ = 1;
  std::atomic<std::uint64_t> jobs_{0};  // jobs begun; see begin_job()
};

// One job across nodes (NetworkJob) over the MpiWorld: its number, its
// failure announcements, and the end-of-job barrier over the nodes, which the
// last of this node's workers to drain starts (MpiTransport::end_job).
class MpiJob final : public NetworkJob {
 public:
  MpiJob(MpiWorld& world, std::uint32_t workers, std::function<void()> wake_workers);

  void announce_failure(const std::string& text) override { world_.announce_failure(number_, text); }
  std::optional<std::string> failure_from_others() override { return world_.failure_from_others(number_); }
  bool drained() const noexcept override { return drained_.load(std::memory_order_acquire) == workers_; }
  // Acquire pairs with the release in barrier_done(): a worker that sees the
  // job finished has nothing left to take in.
  bool finished() const noexcept override { return finished_.load(std::memory_order_acquire); }

  MpiWorld& world() const noexcept { return world_; }
  std::uint64_t number() const noexcept { return number_; }
  // A worker of this node drained (its MPI requests complete, the failures
  // announced here received): whether it was the last, which then started
  // the end-of-job barrier over the nodes, and tests it (barrier_done()).
  bool worker_drained();
  // Whether the barrier completed (by the worker that started it); once it
  // has, the job is finished and every worker woken.
  bool barrier_done();

 private:
  MpiWorld& world_;
  const std::uint64_t number_;  // MpiWorld::begin_job()'s
  const std::uint32_t workers_;
  const std::function<void()> wake_workers_;
  // Workers that drained; acq_rel on each increment (worker_drained), so the
  // last one sees every other drained before it starts the barrier.
  std::atomic<std::uint32_t> drained_{0};
  // The barrier completed: release by the worker that saw it (barrier_done),
  // acquire by every worker (finished()) before it leaves the job.
  std::atomic<bool> finished_{false};
};

// A worker's transport over the MpiWorld (NetworkTransport).
std::unique_ptr<NetworkTransport> make_mpi_transport();

}  // namespace switchyard::detail
