#pragma once
// The sub-machines of the one-to-all and all-to-one k-level algorithms: the
// p processes (ranks relative to the root) are cut into contiguous ranges, the
// first process of each range its leader, and the ranges cut again, level by
// level, down to single processes. At level d each range's leader sends the
// leaders of its other sub-ranges their sub-range's messages (one-to-all), or
// receives theirs (all-to-one, levels in reverse). Ranges are contiguous, so a
// leader's messages for a sub-range are one contiguous piece of its own.
//   1-lev-dir     : p single processes.
//   2-lev-rec     : rows of ceil(sqrt(p)) processes, then each row 1-lev-dir.
//   3-lev-sq      : groups of ceil(sqrt(p)), then each group 2-lev-rec.
//   logp-lev-rec(g): the range holding the leader keeps ceil(g * n) of its n
//                  processes (at least 1, at most n - 1), the rest is the other
//                  half; both halves cut again the same way. logp-lev-sq is g = 0.5;
//                  1-lev-our-br sends the whole long message down this tree.
// The sub-machine of a level is the leaders of the parts, except for halving,
// where it is the whole range being cut. These are switchyard::model's
// descriptions (model/algorithms.hpp), which the tests hold them to.

#include <cstdint>
#include <string_view>
#include <vector>

namespace switchyard::model::collectives::detail {

struct TreeShape {
  enum Kind { kDirect, kRows, kGroups, kGamma } kind = kDirect;
  double gamma = 0.5;
};
// nullopt-like: kind kDirect for "1-lev-dir"; throws InvalidArgument for a name that is no tree algorithm.
TreeShape tree_shape(std::string_view algorithm);

struct TreeChild {
  std::uint32_t depth = 0;
  std::uint32_t start = 0;  // relative rank of the sub-range's leader
  std::uint32_t size = 0;  // processes in the sub-range
  std::uint32_t sub_rank = 0;  // its leader's rank in the level's sub-communicator (the sender is 0)
};

// One process's part of the tree.
struct TreeRole {
  std::uint32_t depths = 0;  // levels of the whole tree
  int recv_depth = -1;  // the level at which it gets its range from its parent; -1 for the root
  std::uint32_t range = 1;  // processes in the range it leads (its own included)
  std::vector<TreeChild> children;  // the sub-ranges it serves, by level
  // Per level: the color of its sub-communicator (the leader's relative rank), or -1 if not in one.
  std::vector<std::int64_t> color;
};

TreeRole tree_role(TreeShape shape, std::uint32_t processes, std::uint32_t rank);

}  // namespace switchyard::model::collectives::detail
