#pragma once
// A fixed-size array for the scratch state of a runtime call (the tickets an
// exchange keeps in flight), whose memory comes from the calling worker's frame
// cache (detail/frame_cache.hpp): once a call of that size has run on this
// core, making one is a pointer pop, not a trip through malloc. Arrays over
// the cache's largest class fall back to the heap.

#include <cstddef>
#include <memory>
#include <new>
#include <span>

#include "switchyard/task.hpp"

namespace switchyard::detail {

template <class T>
class PooledArray {
 public:
  explicit PooledArray(std::size_t n)
      : size_(n), data_(n ? static_cast<T*>(FrameCache::allocate(n * sizeof(T))) : nullptr) {
    static_assert(alignof(T) <= 16, "the frame cache aligns blocks to 16 bytes");
    std::uninitialized_value_construct_n(data_, n);
  }
  ~PooledArray() {
    std::destroy_n(data_, size_);
    if (data_) FrameCache::deallocate(data_);
  }
  PooledArray(const PooledArray&) = delete;
  PooledArray& operator=(const PooledArray&) = delete;

  // Replaces element i with what make() returns, built in place: the callee
  // writes the element where it lives, with no temporary to move from. (A
  // ticket moved out of a temporary is loaded as one 16-byte word right after
  // being stored as two 8-byte ones, a store-forwarding stall on every message.)
  template <class Make>
  T& emplace(std::size_t i, Make&& make) {
    std::destroy_at(data_ + i);
    return *::new (static_cast<void*>(data_ + i)) T(make());
  }

  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  std::span<T> span() noexcept { return {data_, size_}; }

 private:
  std::size_t size_;
  T* data_;
};

}  // namespace switchyard::detail
