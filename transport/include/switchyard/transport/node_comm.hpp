#pragma once
// An MPI communicator over every node of a job: the last step of a
// hierarchical collective, where one process per node (the communicator's
// node leader) runs MPI's own collective for its node. Its rank in it is its
// node (a NodeComm is MPI_COMM_WORLD's duplicate or a duplicate of one).
//
// Non-blocking throughout: start_*() posts the operation (MPI_Ibarrier,
// MPI_Iallgather, ...) and returns; test() (MPI_Test) says when it is done.
// The leader's worker tests it from its loop while it runs its other
// processes. At most one operation (or the creating duplicate) is
// outstanding; the buffers are the NodeComm's own and stay valid until the
// next start_*().
//
// Threads: made by one thread, then used by one thread at a time, handed over
// with a release/acquire pair (the Group's).
//
// This header does not include mpi.h; built without MPI, world() is never
// called (no job spans nodes) and the class is a stub.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace switchyard::detail {

class NodeComm {
 public:
  // MPI_COMM_WORLD's duplicate: blocking, collective over every node.
  static std::unique_ptr<NodeComm> world();
  // A duplicate of this one (MPI_Comm_idup): a collective on this
  // communicator, in the same order on every node as its other collectives;
  // the duplicate's first test() that returns true completes it. Needs this
  // one complete (test() true).
  std::unique_ptr<NodeComm> start_dup() const;
  // Frees the communicator. With an operation still outstanding (a cancelled
  // job: other nodes never joined it), MPI may still write into the buffers:
  // the communicator and the buffers are then left to MPI for good.
  ~NodeComm();
  NodeComm(const NodeComm&) = delete;
  NodeComm& operator=(const NodeComm&) = delete;

  std::uint32_t node() const noexcept { return node_; }
  std::uint32_t nodes() const noexcept { return nodes_; }

  void start_barrier();
  // Every node's `mine` (each node's of `mine.size()` bytes), by node, into received().
  void start_allgather(std::span<const std::byte> mine);
  // Every node's `mine` (node k's of sizes[k] bytes), by node, back to back, into received().
  void start_allgatherv(std::span<const std::byte> mine, std::span<const std::uint64_t> sizes);
  // `root`'s `bytes` (size bytes; ignored elsewhere) into received() on every node.
  void start_broadcast(std::span<const std::byte> bytes, std::uint64_t size, std::uint32_t root);
  // The element-wise sum of every node's `mine` (int64 values, of one length everywhere), into received().
  void start_allreduce_sum(std::span<const std::byte> mine);
  // Blocking, for callers outside a job's processes: element-wise sums of
  // `sums` and maxima of `maxima` over the nodes, in place, in one MPI_Allreduce.
  void reduce_now(std::span<std::int64_t> sums, std::span<std::int64_t> maxima);

  // Whether nothing is outstanding any more (progresses it).
  bool test();
  // Blocks until nothing is outstanding: only for an operation every node
  // has started (the creating duplicate, at the end of a job that succeeded).
  void wait();
  std::span<const std::byte> received() const noexcept;
  // received(), moved out (no copy); the next operation makes a new buffer.
  std::vector<std::byte> take_received() noexcept;

  struct Impl;

 private:
  NodeComm(std::unique_ptr<Impl> impl, std::uint32_t node, std::uint32_t nodes);
  // Owned (deleted by the destructor, unless MPI still uses it). A plain
  // pointer: the destructor of a build without MPI (no_mpi.cpp) must not
  // need the MPI build's Impl, which it replaces at link time.
  Impl* impl_ = nullptr;
  std::uint32_t node_ = 0, nodes_ = 1;
};

}  // namespace switchyard::detail
