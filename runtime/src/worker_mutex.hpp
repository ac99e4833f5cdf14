#pragma once
// The lock of what the workers of a job share and make as they go: the group
// table, a group's attachments, the programs a plan keeps, the staging
// buffers. oneTBB's mutex, which spins a while before it sleeps: these locks
// are held for a few microseconds at most (two cores making one communicator
// in a first run), and a worker that sleeps in the kernel for one stops every
// process of its core until a futex wake-up, 10-30 us on a virtual machine
// (a redistribution's first run at P = 2 waited 6 us a library duplicate for
// it, with std::mutex).

#include <oneapi/tbb/mutex.h>

namespace switchyard::detail {

using WorkerMutex = tbb::mutex;

}  // namespace switchyard::detail
