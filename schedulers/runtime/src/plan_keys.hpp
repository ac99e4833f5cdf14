#pragma once
// The keys of a plan's compiled runs (run_compiled_exchange): see plan_keys.cpp.

#include <cstdint>

#include "switchyard/communicator.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

// A new key of this node's own (a plan from the whole pattern, its DescribedMemory).
std::uint64_t local_compiled_key();

// A new key of a plan from create(), unique across the nodes: rank 0's, agreed by agree_compiled_key().
std::uint64_t shared_compiled_key();

// The key of a plan from create(): rank 0's shared_compiled_key(), on every member of lib.
Task<std::uint64_t> agree_compiled_key(Communicator lib);

}  // namespace switchyard::schedulers::detail
