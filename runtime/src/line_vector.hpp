#pragma once
// LineVector<T>: a std::vector whose storage fills cache lines of its own.
//
// Why: the heap packs small blocks side by side, and a block freed by one
// thread is reused by whichever thread frees and allocates next (glibc's
// per-thread caches), so a core's small vectors end up on lines that also
// hold another core's. A vector read on every run of its core (a compiled
// program's arrivals, the runs it has seen other cores publish, its staged
// pairs) then misses each time the other core writes its neighbour: one
// cross-core transfer on the run's path, several per run (docs/benchmarks.md,
// stop 71). Storage that starts on a line and is rounded up to whole lines
// shares none.
//
// For small vectors: a large array shares at most the lines at its two ends,
// a small part of it. Large arrays that a run walks (a program's steps and
// resolved addresses, its pairs' member addresses, the worker's ready queue
// and watches) measured slower at n=512 and 147 blocks in LineVectors, for a
// reason not found (the same code; only where the heap put them), so they
// stay std::vector (docs/benchmarks.md, stop 71).

#include <cstddef>
#include <new>
#include <vector>

#include "switchyard/cache_line.hpp"

namespace switchyard::detail {

template <class T>
struct LineAllocator {
  using value_type = T;

  LineAllocator() noexcept = default;
  template <class U>
  LineAllocator(const LineAllocator<U>&) noexcept {}

  static std::size_t bytes_of(std::size_t n) noexcept {
    return (n * sizeof(T) + kCacheLine - 1) / kCacheLine * kCacheLine;
  }
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / 2 / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new (bytes_of(n), std::align_val_t{kCacheLine}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete (p, std::align_val_t{kCacheLine}); }

  template <class U>
  bool operator==(const LineAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using LineVector = std::vector<T, LineAllocator<T>>;

}  // namespace switchyard::detail
