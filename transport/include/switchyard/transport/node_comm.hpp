#pragma once
// An MPI communicator over every node (MPI_COMM_WORLD's duplicate), one per
// Runtime: the reductions a Runtime runs outside its jobs
// (Runtime::combine_over_nodes) go on a communicator of their own.
//
// This header does not include mpi.h; built without MPI, world() is never
// called (no job spans nodes) and the class is a stub.

#include <cstdint>
#include <memory>
#include <span>

namespace switchyard::detail {

class NodeComm {
 public:
  // MPI_COMM_WORLD's duplicate: blocking, collective over every node.
  static std::unique_ptr<NodeComm> world();
  ~NodeComm();
  NodeComm(const NodeComm&) = delete;
  NodeComm& operator=(const NodeComm&) = delete;

  // Blocking, for callers outside a job's processes: element-wise sums of
  // `sums` and maxima of `maxima` over the nodes, in place, in one MPI_Allgather.
  void reduce_now(std::span<std::int64_t> sums, std::span<std::int64_t> maxima);

  struct Impl;

 private:
  NodeComm(std::unique_ptr<Impl> impl, std::uint32_t nodes);
  // Owned (deleted by the destructor). A plain pointer: the destructor of a
  // build without MPI (no_mpi.cpp) must not need the MPI build's Impl, which
  // it replaces at link time.
  Impl* impl_ = nullptr;
  std::uint32_t nodes_ = 1;
};

}  // namespace switchyard::detail
