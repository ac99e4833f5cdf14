#pragma once
/// @file
/// The one cache-line size of the project: what every layout shared across
/// cores aligns to (alignas(kCacheLine)) and asserts (static_assert), so that
/// two cores writing neighbouring objects never share a line.

#include <cstddef>
#include <new>

namespace switchyard {

/// The cache-line size in bytes, a power of two of 64 or more:
/// std::hardware_destructive_interference_size where the compiler gives it
/// (GCC), else 64 (Clang 14 with libstdc++ gives none; 64 is every x86-64's and
/// most ARMv8's line). GCC warns that the value may differ between -mtune
/// settings, since it can change a public layout: the library and its users
/// are compiled by the same compiler with the same flags here, and the wire's
/// slots-per-line arithmetic (wire.hpp) asserts what it relies on.
#if defined(__cpp_lib_hardware_interference_size)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winterference-size"
#endif
inline constexpr std::size_t kCacheLine = std::hardware_destructive_interference_size;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#else
inline constexpr std::size_t kCacheLine = 64;
#endif
static_assert(kCacheLine >= 64 && (kCacheLine & (kCacheLine - 1)) == 0,
              "a cache line is a power of two of 64 bytes or more");

/// Whether T fills whole cache lines and starts on one: what every object
/// written by one core and read by another asserts about its layout.
template <class T>
inline constexpr bool kOwnsCacheLines = alignof(T) % kCacheLine == 0 && sizeof(T) % kCacheLine == 0;

}  // namespace switchyard
