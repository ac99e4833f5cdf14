#pragma once
// The requests of N producers, each a Poisson process of the same rate
// (PoissonArrivals, stream = the node), handed out slice by slice of time:
// what every slot-mode scheme draws its requests from.
#include <cstdint>
#include <vector>

#include "switchyard/dynamic/poisson_arrivals.hpp"

namespace switchyard::dynamic {

/// The Poisson request streams of N nodes (one PoissonArrivals each, stream = the
/// node), handed out in time order per node up to a given time.
class ArrivalStreams {
 public:
  /// `nodes` streams of `rate` requests per node per time unit, drawn from `seed`.
  ArrivalStreams(std::int32_t nodes, double rate, std::uint64_t seed) {
    streams_.reserve(static_cast<std::size_t>(nodes));
    for (std::int32_t v = 0; v < nodes; ++v) {
      streams_.emplace_back(rate, seed, static_cast<std::uint64_t>(v));
      next_.push_back(streams_.back().next());
    }
  }
  /// Calls on_request(node, time) for every request generated before `time`
  /// not handed out yet: node by node, each node's in time order.
  template <class OnRequest>
  void until(double time, OnRequest&& on_request) {
    for (std::size_t v = 0; v < streams_.size(); ++v) {
      for (; next_[v] < time; next_[v] = streams_[v].next()) on_request(static_cast<std::int32_t>(v), next_[v]);
    }
  }

 private:
  std::vector<PoissonArrivals> streams_;
  std::vector<double> next_;
};

}  // namespace switchyard::dynamic
