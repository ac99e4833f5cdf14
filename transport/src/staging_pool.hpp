#pragma once
// Where an eager message waits when it arrives before its receive: a block from
// this per-core pool, by power-of-two size class, recycled through a free list
// per class. After warm-up an unexpected message costs a pointer pop, not a
// malloc, and the pool keeps its blocks across jobs, so a job run many times
// faults no pages in. Touched by its core's worker thread only.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace switchyard::detail {

class StagingPool {
 public:
  static constexpr std::size_t kSmallest = 64;
  static constexpr std::size_t kClasses = 15;  // 64 B .. 1 MiB: every eager message fits

  StagingPool() = default;
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool() {
    for (auto& list : free_) {
      for (std::byte* b : list) ::operator delete (b, std::align_val_t{kSmallest});
    }
  }

  std::byte* acquire(std::uint64_t bytes) {
    auto& list = free_[class_of(bytes)];
    if (list.empty()) {
      return static_cast<std::byte*>(::operator new (kSmallest << class_of(bytes), std::align_val_t{kSmallest}));
    }
    std::byte* b = list.back();
    list.pop_back();
    return b;
  }
  // `bytes` as given to acquire().
  void release(std::byte* block, std::uint64_t bytes) { free_[class_of(bytes)].push_back(block); }

 private:
  static std::size_t class_of(std::uint64_t bytes) noexcept {
    return bytes <= kSmallest ? 0 : static_cast<std::size_t>(std::bit_width((bytes - 1) / kSmallest));
  }
  std::array<std::vector<std::byte*>, kClasses> free_;
};

}  // namespace switchyard::detail
