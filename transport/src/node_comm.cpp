#include "switchyard/transport/node_comm.hpp"

#include "switchyard/errors.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "mpi_check.hpp"

namespace switchyard::detail {

struct NodeComm::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;  // the outstanding operation, or the creating MPI_Comm_idup
  // The operation's buffers (and MPI_Iallgatherv's counts): MPI's until it completes.
  std::vector<std::byte> sent, received;
  std::vector<int> counts, offsets;
};

NodeComm::NodeComm(std::unique_ptr<Impl> impl, std::uint32_t node, std::uint32_t nodes)
    : impl_(impl.release()), node_(node), nodes_(nodes) {}

NodeComm::~NodeComm() {
  if (!impl_) return;
  // MPI still owns the request (a collective may be neither freed nor
  // cancelled): it keeps the communicator and may write into the buffers,
  // which are left to it on purpose.
  if (!test()) return;
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  delete impl_;
}

std::unique_ptr<NodeComm> NodeComm::world() {
  auto impl = std::make_unique<Impl>();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->comm), "MPI_Comm_dup");
  int rank = 0, size = 1;
  MPI_Comm_rank(impl->comm, &rank);
  MPI_Comm_size(impl->comm, &size);
  return std::unique_ptr<NodeComm>(
      new NodeComm(std::move(impl), static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(size)));
}

std::unique_ptr<NodeComm> NodeComm::start_dup() const {
  auto impl = std::make_unique<Impl>();
  check(MPI_Comm_idup(impl_->comm, &impl->comm, &impl->request), "MPI_Comm_idup");
  return std::unique_ptr<NodeComm>(new NodeComm(std::move(impl), node_, nodes_));
}

std::span<const std::byte> NodeComm::received() const noexcept { return impl_->received; }
std::vector<std::byte> NodeComm::take_received() noexcept { return std::move(impl_->received); }

bool NodeComm::test() {
  if (impl_->request == MPI_REQUEST_NULL) return true;
  int done = 0;
  check(MPI_Test(&impl_->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
  return done != 0;
}

void NodeComm::wait() { check(MPI_Wait(&impl_->request, MPI_STATUS_IGNORE), "MPI_Wait"); }

void NodeComm::start_barrier() { check(MPI_Ibarrier(impl_->comm, &impl_->request), "MPI_Ibarrier"); }

void NodeComm::start_allgather(std::span<const std::byte> mine) {
  const int each = to_int_count(mine.size(), "an allgather");
  impl_->sent.assign(mine.begin(), mine.end());
  impl_->received.resize(mine.size() * nodes_);
  check(MPI_Iallgather(impl_->sent.data(), each, MPI_BYTE, impl_->received.data(), each, MPI_BYTE, impl_->comm, &impl_->request),
        "MPI_Iallgather");
}

void NodeComm::start_allgatherv(std::span<const std::byte> mine, std::span<const std::uint64_t> sizes) {
  impl_->counts.resize(nodes_);
  impl_->offsets.resize(nodes_);
  std::uint64_t total = 0;
  for (std::uint32_t k = 0; k < nodes_; ++k) {
    impl_->counts[k] = to_int_count(sizes[k], "an allgather");
    impl_->offsets[k] = to_int_count(total, "an allgather");
    total += sizes[k];
  }
  to_int_count(total, "an allgather");
  impl_->sent.assign(mine.begin(), mine.end());
  impl_->received.resize(total);
  check(MPI_Iallgatherv(impl_->sent.data(), impl_->counts[node_], MPI_BYTE, impl_->received.data(), impl_->counts.data(), impl_->offsets.data(),
                        MPI_BYTE, impl_->comm, &impl_->request),
        "MPI_Iallgatherv");
}

void NodeComm::start_broadcast(std::span<const std::byte> bytes, std::uint64_t size, std::uint32_t root) {
  const int count = to_int_count(size, "a broadcast");
  if (node_ == root) {
    impl_->received.assign(bytes.begin(), bytes.end());
  } else {
    impl_->received.resize(size);
  }
  check(MPI_Ibcast(impl_->received.data(), count, MPI_BYTE, static_cast<int>(root), impl_->comm, &impl_->request),
        "MPI_Ibcast");
}

void NodeComm::start_allreduce_sum(std::span<const std::byte> mine) {
  const int count = to_int_count(mine.size() / sizeof(std::int64_t), "an allreduce");
  impl_->sent.assign(mine.begin(), mine.end());
  impl_->received.resize(mine.size());
  check(MPI_Iallreduce(impl_->sent.data(), impl_->received.data(), count, MPI_INT64_T, MPI_SUM, impl_->comm, &impl_->request),
        "MPI_Iallreduce");
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
