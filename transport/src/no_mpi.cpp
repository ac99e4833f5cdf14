// The network transport of a program that does not link
// switchyard::mpi_transport: every job is one node. Every definition here is
// weak: a program that links the MPI transport's objects (mpi_transport.cpp,
// node_comm.cpp, their strong definitions) gets those instead, so that MPI is
// linked into the programs that ask for it and into no other (issue 35).
// Nothing here may need the MPI build's types (MpiWorld::Impl, NodeComm::Impl):
// its code would then meet theirs at link time.

#include <cstdlib>

#include "switchyard/errors.hpp"
#include "switchyard/transport/mpi_transport.hpp"
#include "switchyard/transport/node_comm.hpp"

namespace switchyard::detail {

[[gnu::weak]] MpiWorld* MpiWorld::instance() { return nullptr; }
[[gnu::weak]] std::vector<std::vector<int>> MpiWorld::allgather(const std::vector<int>& mine) const { return {mine}; }
[[gnu::weak]] void MpiWorld::announce_failure(std::uint64_t, const std::string&) {}
[[gnu::weak]] bool MpiWorld::failures_delivered() { return true; }
[[gnu::weak]] std::optional<std::string> MpiWorld::failure_from_others(std::uint64_t) { return std::nullopt; }
[[gnu::weak]] std::uint64_t MpiWorld::begin_job() noexcept { return jobs_.fetch_add(1, std::memory_order_relaxed); }
[[gnu::weak]] void MpiWorld::start_barrier() {}
[[gnu::weak]] bool MpiWorld::barrier_done() { return true; }
[[gnu::weak]] void MpiWorld::abort(int code) const noexcept { std::_Exit(code); }

[[gnu::weak]] std::unique_ptr<NetworkTransport> make_mpi_transport() {
  throw Error("switchyard: this program does not link switchyard::mpi_transport: every job is one node");
}

// No NodeComm is ever made without MPI: only its destructor is reached (the Runtime's empty pointer).
[[gnu::weak]] NodeComm::~NodeComm() = default;
[[gnu::weak]] std::unique_ptr<NodeComm> NodeComm::world() {
  throw Error("switchyard: this program does not link switchyard::mpi_transport: every job is one node");
}
[[gnu::weak]] void NodeComm::reduce_now(std::span<std::int64_t>, std::span<std::int64_t>) {}

}  // namespace switchyard::detail
