#pragma once
// The library duplicates of the world that a Runtime's last job asked for,
// kept from job to job as the chains of keys that name them (a
// redistribution's duplicate of the world, then its exchange plan's
// duplicate of that), so that the next job makes them before its processes
// start.
//
// Made inside a job, a duplicate is made by the first member to ask, under
// the job's registry lock, inside that member's first run of a plan: one
// core makes it, on memory other threads wrote last, while the others sleep
// on the lock, and a redistribution's first run waited for its two longer
// than a warm run takes to copy a fifth of its bytes (docs/benchmarks.md, "A
// plan's first run in a job"). Made by the host thread while it builds the
// job, no run waits for them. Their ids are derived
// from (parent, key), as across nodes: they take none of the node's ids and
// no place under the limit of communicators a job may hold. A job that asks
// for none of them pays a few microseconds at its start, once: what it did
// not ask for is not kept. At most kMaxChains chains of kMaxDepth keys are
// kept.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace switchyard::detail {

// Library keys from the world down to one duplicate: {a} is the world's
// duplicate for key a, {a, b} that duplicate's own for key b.
using LibraryChain = std::vector<std::uint64_t>;

class KeptLibraries {
 public:
  static constexpr std::size_t kMaxChains = 16;
  static constexpr std::size_t kMaxDepth = 4;

  std::vector<LibraryChain> chains() const {
    std::lock_guard lock(mutex_);
    return chains_;
  }
  // What a job that has ended asked for (jobs side by side: the last to end).
  void keep(std::vector<LibraryChain> chains) {
    std::lock_guard lock(mutex_);
    chains_ = std::move(chains);
  }

 private:
  mutable std::mutex mutex_;  // jobs side by side begin and end on their own host threads
  std::vector<LibraryChain> chains_;
};

}  // namespace switchyard::detail
