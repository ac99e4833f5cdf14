// The Williams design of interleaved measurements (balanced_order.hpp).
#include "switchyard/balanced_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

// Over one full cycle (count repetitions, 2 x count for an odd count) every
// repetition is a permutation, every contestant takes every position equally
// often, and every ordered pair (b right after a) occurs equally often: once
// per cycle of an even count, twice of an odd one.
TEST(BalancedOrder, EveryContestantFollowsEveryOtherEquallyOften) {
  for (std::size_t count = 1; count <= 12; ++count) {
    SCOPED_TRACE(count);
    const std::size_t cycle = count % 2 ? 2 * count : count;
    std::vector<std::size_t> everyone(count);
    std::iota(everyone.begin(), everyone.end(), std::size_t{0});
    std::vector<std::vector<int>> at_position(count, std::vector<int>(count, 0));
    std::vector<std::vector<int>> follows(count, std::vector<int>(count, 0));
    for (std::size_t rep = 0; rep < cycle; ++rep) {
      std::vector<std::size_t> order(count);
      for (std::size_t j = 0; j < count; ++j) order[j] = switchyard::balanced_order(count, rep, j);
      std::vector<std::size_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      ASSERT_EQ(sorted, everyone) << "repetition " << rep << " is not a permutation";
      for (std::size_t j = 0; j < count; ++j) {
        ++at_position[order[j]][j];
        if (j > 0) ++follows[order[j - 1]][order[j]];
      }
    }
    const int per_position = static_cast<int>(cycle / count);
    for (std::size_t a = 0; a < count; ++a)
      for (std::size_t b = 0; b < count; ++b) {
        EXPECT_EQ(at_position[a][b], per_position) << "contestant " << a << " at position " << b;
        EXPECT_EQ(follows[a][b], a == b ? 0 : per_position) << b << " right after " << a;
      }
    // The design repeats with its cycle.
    for (std::size_t j = 0; j < count; ++j)
      EXPECT_EQ(switchyard::balanced_order(count, 3, j), switchyard::balanced_order(count, 3 + cycle, j));
  }
  static_assert(switchyard::balanced_order(4, 0, 2) == 3, "the first row is 0, 1, 3, 2");
}
