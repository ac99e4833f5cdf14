#pragma once
// Every allocation of the program, counted in g_allocations (and its bytes in
// g_allocated_bytes): replaces the
// global operator new and delete, so include it in exactly one source file of
// a test executable (the one that asserts that some runs allocate nothing).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

// Relaxed: tallies. The tests read them after the job has joined its workers,
// or from a process that only compares two of its own reads.
std::atomic<std::uint64_t> g_allocations{0}, g_allocated_bytes{0};

void* counted_allocation(std::size_t bytes, std::size_t alignment) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.fetch_add(bytes, std::memory_order_relaxed);
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(bytes ? bytes : 1);
  } else if (posix_memalign(&p, alignment, bytes ? bytes : 1) != 0) {
    p = nullptr;
  }
  return p;
}

// Out of line: GCC would otherwise see free() inlined where a `new`-ed pointer
// is deleted, and warn of a mismatch.
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_allocation(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted_allocation(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_allocation(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_allocation(n, 0); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
