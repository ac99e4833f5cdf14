// The runtime's session and jobs across nodes over MPI (network_session.hpp):
// the strong definitions of open_network_session() and network_node(), which
// replace no_mpi.cpp's weak ones in a program that links switchyard::transport_mpi.

#include <mpi.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "mpi_check.hpp"
#include "mpi_world.hpp"

namespace switchyard::detail {

MpiJob::MpiJob(MpiWorld& world, std::uint32_t workers, std::function<void()> wake_workers)
    : world_(world), number_(world.begin_job()), workers_(workers), wake_workers_(std::move(wake_workers)) {}

bool MpiJob::worker_drained() {
  if (drained_.fetch_add(1, std::memory_order_acq_rel) + 1 != workers_) return false;
  world_.start_barrier();
  return true;
}

bool MpiJob::barrier_done() {
  if (!world_.barrier_done()) return false;
  finished_.store(true, std::memory_order_release);  // pairs with the acquire in finished()
  wake_workers_();
  return true;
}

namespace {

class MpiSession final : public NetworkSession {
 public:
  // Collective over every node (MPI_Comm_dup).
  explicit MpiSession(MpiWorld& world) : world_(world) {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &reductions_), "MPI_Comm_dup");
  }
  ~MpiSession() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&reductions_);
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  std::uint32_t node() const noexcept override { return world_.node(); }
  std::uint32_t nodes() const noexcept override { return world_.nodes(); }
  std::vector<std::vector<int>> allgather(const std::vector<int>& mine) override { return world_.allgather(mine); }
  void combine(std::span<std::int64_t> sums, std::span<std::int64_t> maxima) override;
  std::optional<std::vector<std::byte>> agree_on_job(std::span<const std::byte> mine,
                                                     std::chrono::milliseconds timeout) override;
  std::unique_ptr<NetworkJob> begin_job(std::uint32_t workers, std::function<void()> wake_workers) override {
    return std::make_unique<MpiJob>(world_, workers, std::move(wake_workers));
  }
  std::unique_ptr<NetworkTransport> make_transport() override { return make_mpi_transport(); }
  [[noreturn]] void abort(int code) noexcept override { world_.abort(code); }

 private:
  MpiWorld& world_;
  // This Runtime's own communicator for combine(), so that two Runtimes'
  // reductions never meet on one.
  MPI_Comm reductions_ = MPI_COMM_NULL;
};

std::optional<std::vector<std::byte>> MpiSession::agree_on_job(std::span<const std::byte> mine,
                                                               std::chrono::milliseconds timeout) {
  // On the heap: a gather left open at the timeout may still write them
  // before the program ends, so they are then never freed.
  const int size = static_cast<int>(mine.size());
  auto sent = std::make_unique<std::byte[]>(mine.size());
  std::copy(mine.begin(), mine.end(), sent.get());
  auto all = std::make_unique<std::byte[]>(mine.size() * nodes());
  MPI_Request r;
  check(MPI_Iallgather(sent.get(), size, MPI_BYTE, all.get(), size, MPI_BYTE, reductions_, &r), "MPI_Iallgather");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int done = 0, polls = 0;; ++polls) {
    check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return std::vector<std::byte>(all.get(), all.get() + mine.size() * nodes());
    if (std::chrono::steady_clock::now() >= deadline) {
      (void)sent.release();
      (void)all.release();
      return std::nullopt;
    }
    // Nodes usually start together: spin a little, then wait without burning the core.
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

void MpiSession::combine(std::span<std::int64_t> sums, std::span<std::int64_t> maxima) {
  // One MPI_Allgather of both vectors, combined here: MPI_Allreduce takes one
  // operation, and at a handful of nodes the gather costs what a reduction does.
  const std::uint32_t n = nodes();
  const std::size_t k = sums.size() + maxima.size();
  std::vector<std::int64_t> mine(sums.begin(), sums.end()), all(k * n);
  mine.insert(mine.end(), maxima.begin(), maxima.end());
  check(MPI_Allgather(mine.data(), static_cast<int>(k), MPI_INT64_T, all.data(), static_cast<int>(k), MPI_INT64_T,
                      reductions_),
        "MPI_Allgather");
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sums[i] = 0;
    for (std::uint32_t node = 0; node < n; ++node) sums[i] += all[node * k + i];
  }
  for (std::size_t i = 0; i < maxima.size(); ++i) {
    for (std::uint32_t node = 0; node < n; ++node) maxima[i] = std::max(maxima[i], all[node * k + sums.size() + i]);
  }
}

}  // namespace

std::unique_ptr<NetworkSession> open_network_session() {
  MpiWorld* world = MpiWorld::instance();
  if (!world || world->nodes() == 1) return nullptr;
  return std::make_unique<MpiSession>(*world);
}

std::uint32_t network_node() {
  const MpiWorld* world = MpiWorld::instance();
  return world && world->nodes() > 1 ? world->node() : 0;
}

}  // namespace switchyard::detail
