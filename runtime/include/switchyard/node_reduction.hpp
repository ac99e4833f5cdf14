#pragma once
/// @file
/// Values of this node to combine with every other node's, many at once: a
/// table row's timings (each repetition's longest span over the nodes) and
/// counts (sums over the nodes) in one MPI reduction, not one each. Every node
/// adds the same stretches in the same order, then calls combine() at the same
/// point, after its job (never inside a timed region).
///
/// @code
///   NodeReduction over;
///   const auto comm = over.add(clocks.node_spans(rt), NodeReduction::kMax);
///   const auto counts = over.add(job_counts, NodeReduction::kSum);
///   over.combine(rt);
///   use(over.result(comm), over.result(counts));
/// @endcode
///
/// On one node combine() leaves the values as they are, and costs nothing.

#include <cstdint>
#include <span>
#include <vector>

#include "switchyard/runtime.hpp"

namespace switchyard {

/// Values of this node gathered for one reduction over the nodes (see the
/// file's description).
class NodeReduction {
 public:
  /// How a stretch combines over the nodes.
  enum Op {
    kSum,  ///< element-wise sum
    kMax  ///< element-wise maximum
  };
  /// A reserved stretch: where its values lie; the handle for result().
  struct Stretch {
    Op op;  ///< how it combines, and so which of the two vectors holds it
    std::size_t offset,  ///< its first value's index in that vector
        size;  ///< its number of values
  };

  /// Reserves a stretch holding `mine`, combined by `op`; its result() once combined.
  Stretch add(std::span<const std::int64_t> mine, Op op) {
    std::vector<std::int64_t>& to = op == kSum ? sums_ : maxima_;
    const Stretch s{op, to.size(), mine.size()};
    to.insert(to.end(), mine.begin(), mine.end());
    return s;
  }
  /// Every node's stretches combined, on every node (Runtime::combine_over_nodes).
  void combine(Runtime& rt) { rt.combine_over_nodes(sums_, maxima_); }
  /// The stretch's values: this node's before combine(), every node's combined after.
  std::span<const std::int64_t> result(const Stretch& s) const {
    return std::span<const std::int64_t>(s.op == kSum ? sums_ : maxima_).subspan(s.offset, s.size);
  }

 private:
  std::vector<std::int64_t> sums_, maxima_;
};

}  // namespace switchyard
