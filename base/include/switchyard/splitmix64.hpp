#pragma once
/// @file
/// SplitMix64 (Steele, Lea and Flood, 2014), the one generator and mixing
/// function of switchyard: one word of state, passes BigCrush, and its n-th
/// output can be computed directly, so a payload byte or a per-row stream can be
/// had without stepping. Written out here only: schedulers, payloads, the
/// dynamic pipelines and the tests all draw from it.

#include <cstdint>

namespace switchyard {

/// The Weyl increment of the state: the golden ratio in 64-bit fixed point.
inline constexpr std::uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ull;

/// The output function: a bijective, well-mixed function of z.
constexpr std::uint64_t splitmix64_finalize(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The output of a generator whose state is x before its step: also the usual
/// way to mix one word into an unrelated one.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept { return splitmix64_finalize(x + kSplitMix64Gamma); }

/// The generator, as a UniformRandomBitGenerator (std::shuffle and the
/// distributions take it).
class SplitMix64 {
 public:
  using result_type = std::uint64_t;  ///< each draw is one 64-bit word
  /// A generator whose state is `state` (a seed: any value will do).
  explicit constexpr SplitMix64(std::uint64_t state) noexcept : state_(state) {}
  /// The smallest draw: 0.
  static constexpr result_type min() noexcept { return 0; }
  /// The largest draw: 2^64 - 1.
  static constexpr result_type max() noexcept { return ~result_type{0}; }
  /// Steps the state and returns the next draw.
  constexpr result_type operator()() noexcept { return splitmix64_finalize(state_ += kSplitMix64Gamma); }

 private:
  std::uint64_t state_;
};

/// The seed of an independent stream `stream` of `seed`: neighbouring streams
/// (a plan's runs, a sample's matrix and scheduler) get unrelated generators.
constexpr std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) noexcept {
  return splitmix64(seed ^ splitmix64(stream));
}

/// A double uniform in [0, 1) from the top 53 bits of one draw: the same value
/// for a seed on every toolchain, which std::uniform_real_distribution does not
/// promise.
constexpr double unit_interval(std::uint64_t draw) noexcept { return static_cast<double>(draw >> 11) * 0x1.0p-53; }

}  // namespace switchyard
