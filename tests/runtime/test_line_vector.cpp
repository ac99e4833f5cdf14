// LineVector (runtime/src/line_vector.hpp): a core's small per-run vectors on
// cache lines of their own, so that no other allocation, another core's
// included, lies on a line of theirs.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "line_vector.hpp"  // runtime/src
#include "switchyard/cache_line.hpp"

namespace {

using switchyard::kCacheLine;
using switchyard::detail::LineAllocator;
using switchyard::detail::LineVector;

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Every size, from a part of a line to a few lines: the storage starts on a
// line, and the allocator asks the heap for every line it touches, whole, so
// that the heap has no part of them to give to another block.
TEST(LineVector, StorageFillsWholeCacheLinesOfItsOwn) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{24}, std::size_t{63}, std::size_t{64},
                              std::size_t{65}, std::size_t{100}, std::size_t{200}}) {
    LineVector<char> v(n);
    EXPECT_EQ(address(v.data()) % kCacheLine, 0u) << n << " bytes";
    const std::size_t asked = LineAllocator<char>::bytes_of(n);
    EXPECT_EQ(asked % kCacheLine, 0u) << n << " bytes";
    EXPECT_GE(asked, n);
    EXPECT_LT(asked, n + kCacheLine);
  }
}

// Elements larger than a line, and a vector that grows: each new storage starts on a line.
TEST(LineVector, GrownStorageStartsOnALineToo) {
  struct Wide {
    char bytes[80];
  };
  LineVector<Wide> v;
  for (int i = 0; i < 40; ++i) {
    v.push_back(Wide{});
    EXPECT_EQ(address(v.data()) % kCacheLine, 0u) << i + 1 << " elements";
  }
}

TEST(LineVector, ARequestPastTheAddressSpaceIsRefusedUpFront) {
  EXPECT_THROW((void)LineAllocator<std::uint64_t>{}.allocate(static_cast<std::size_t>(-1) / 4),
               std::bad_array_new_length);
}

}  // namespace
