#include "drsn_order.hpp"

#include <cstddef>
#include <utility>

#include "switchyard/splitmix64.hpp"

namespace switchyard::schedulers::detail {

void shuffle_pending(std::uint64_t stream, Rank sender, std::span<std::uint32_t> pending) noexcept {
  SplitMix64 rng(stream ^ (std::uint64_t{sender} * 0xd1b54a32d192ed03ull));
  for (std::size_t k = pending.size(); k > 1; --k) std::swap(pending[k - 1], pending[rng() % k]);
}

void drsn_step_order(std::uint64_t seed, std::uint64_t run, Rank sender, std::span<std::uint32_t> steps) noexcept {
  shuffle_pending(splitmix64(seed ^ splitmix64(run)), sender, steps);
}

}  // namespace switchyard::schedulers::detail
