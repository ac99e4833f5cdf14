// The network session of a program that does not link
// switchyard::transport_mpi: every job is one node. Both definitions are weak:
// a program that links the MPI transport's objects (transport/mpi/, their
// strong definitions) gets those instead, so that MPI is linked into the
// programs that ask for it and into no other.

#include "network_session.hpp"

namespace switchyard::detail {

[[gnu::weak]] std::unique_ptr<NetworkSession> open_network_session() { return nullptr; }
[[gnu::weak]] std::uint32_t network_node() { return 0; }

}  // namespace switchyard::detail
