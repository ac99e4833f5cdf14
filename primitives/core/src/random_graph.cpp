#include "switchyard/primitives/random_graph.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/errors.hpp"

namespace switchyard::primitives {

VirtualNetwork random_connected_graph(Node n, std::int64_t extra_links, std::uint64_t seed) {
  if (n < 1) throw InvalidArgument("random_connected_graph: " + std::to_string(n) + " nodes");
  std::mt19937_64 rng(seed);
  std::vector<Node> label(static_cast<std::size_t>(n));
  std::iota(label.begin(), label.end(), Node{0});
  std::shuffle(label.begin(), label.end(), rng);
  std::set<std::pair<Node, Node>> links;
  const auto link = [&](Node a, Node b) { links.insert({std::min(a, b), std::max(a, b)}); };
  for (Node v = 1; v < n; ++v) {
    link(label[static_cast<std::size_t>(v)],
         label[static_cast<std::size_t>(std::uniform_int_distribution<Node>(0, v - 1)(rng))]);
  }
  const std::int64_t most = std::int64_t{n} * (n - 1) / 2;
  const std::int64_t wanted =
      std::min<std::int64_t>(most, static_cast<std::int64_t>(links.size()) + std::max<std::int64_t>(0, extra_links));
  std::uniform_int_distribution<Node> any(0, n - 1);
  while (static_cast<std::int64_t>(links.size()) < wanted) {
    const Node a = any(rng), b = any(rng);
    if (a != b) link(a, b);
  }
  const std::vector<std::pair<Node, Node>> edges(links.begin(), links.end());
  return VirtualNetwork::from_edges(
      n, edges, "random:" + std::to_string(n) + "+" + std::to_string(extra_links) + "@" + std::to_string(seed));
}

}  // namespace switchyard::primitives
