#pragma once
// One T per part of a plan, each made by the first use of the part's member.
//
// What a member writes on every run (its split run, its region scratch, its
// run count) is made on the thread of the member's core, from that thread's
// own heap, not in one array by rank: there round robin would put the cores'
// objects side by side, and the hardware prefetchers, fetching lines next to
// those a core reads, take them from the core that writes them, so that each
// start and wait misses (docs/benchmarks.md, stop 70).

#include <atomic>
#include <cstddef>
#include <memory>

namespace switchyard::schedulers::detail {

template <class T>
class MadeOnUse {
 public:
  explicit MadeOnUse(std::size_t parts) : made_(std::make_unique<std::atomic<T*>[]>(parts)), parts_(parts) {}
  ~MadeOnUse() {
    for (std::size_t k = 0; k < parts_; ++k) delete made_[k].load(std::memory_order_relaxed);
  }
  MadeOnUse(const MadeOnUse&) = delete;
  MadeOnUse& operator=(const MadeOnUse&) = delete;

  // Part k's, made now if it was not. Allocates once per part and plan.
  T& operator[](std::size_t k) {
    T* t = made_[k].load(std::memory_order_acquire);
    if (t) [[likely]]
      return *t;
    auto mine = std::make_unique<T>();
    if (made_[k].compare_exchange_strong(t, mine.get(), std::memory_order_acq_rel, std::memory_order_acquire)) {
      return *mine.release();
    }
    return *t;  // another process of the same rank made it first (the plan run on two communicators)
  }
  // Part k's, or null if none was made.
  T* made(std::size_t k) const noexcept { return made_[k].load(std::memory_order_acquire); }

 private:
  // Each set once. The release of the successful compare-exchange pairs with
  // the acquires above: whoever sees the pointer sees the T built.
  std::unique_ptr<std::atomic<T*>[]> made_;
  std::size_t parts_;
};

}  // namespace switchyard::schedulers::detail
