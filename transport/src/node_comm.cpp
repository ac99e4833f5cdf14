#include "switchyard/transport/node_comm.hpp"

#include "switchyard/errors.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "mpi_check.hpp"

namespace switchyard::detail {

struct NodeComm::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
};

NodeComm::NodeComm(std::unique_ptr<Impl> impl, std::uint32_t nodes) : impl_(impl.release()), nodes_(nodes) {}

NodeComm::~NodeComm() {
  if (!impl_) return;
  MPI_Comm_free(&impl_->comm);
  delete impl_;
}

std::unique_ptr<NodeComm> NodeComm::world() {
  auto impl = std::make_unique<Impl>();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->comm), "MPI_Comm_dup");
  int size = 1;
  MPI_Comm_size(impl->comm, &size);
  return std::unique_ptr<NodeComm>(new NodeComm(std::move(impl), static_cast<std::uint32_t>(size)));
}

void NodeComm::reduce_now(std::span<std::int64_t> sums, std::span<std::int64_t> maxima) {
  // One MPI_Allgather of both vectors, combined here: MPI_Allreduce takes one
  // operation, and at a handful of nodes the gather costs what a reduction does.
  const std::size_t k = sums.size() + maxima.size();
  std::vector<std::int64_t> mine(sums.begin(), sums.end()), all(k * nodes_);
  mine.insert(mine.end(), maxima.begin(), maxima.end());
  check(MPI_Allgather(mine.data(), static_cast<int>(k), MPI_INT64_T, all.data(), static_cast<int>(k), MPI_INT64_T,
                      impl_->comm),
        "MPI_Allgather");
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sums[i] = 0;
    for (std::uint32_t n = 0; n < nodes_; ++n) sums[i] += all[n * k + i];
  }
  for (std::size_t i = 0; i < maxima.size(); ++i) {
    for (std::uint32_t n = 0; n < nodes_; ++n) maxima[i] = std::max(maxima[i], all[n * k + sums.size() + i]);
  }
}

}  // namespace switchyard::detail
