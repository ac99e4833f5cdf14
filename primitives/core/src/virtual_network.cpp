#include "switchyard/primitives/virtual_network.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <istream>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "switchyard/errors.hpp"
#include "switchyard/matrix_market_lines.hpp"

namespace switchyard::primitives {

namespace {

// Refuses before allocating: `arcs` directed arcs over n nodes.
void require_fits(std::int64_t n, std::int64_t arcs, const std::string& what) {
  if (n < 1 || n > kMaxNodes) {
    throw InvalidArgument(what + ": " + std::to_string(n) + " nodes is outside 1.." + std::to_string(kMaxNodes));
  }
  if (arcs > kMaxArcs) {
    throw InvalidArgument(what + ": " + std::to_string(arcs / 2) + " links do not fit in memory (at most " +
                          std::to_string(kMaxArcs / 2) + " links)");
  }
}

// Builds the CSR arrays directly from a per-node neighbour generator, so a
// large complete graph is never held twice.
template <class Neighbours>
void fill_csr(std::vector<std::int64_t>& offsets, std::vector<Node>& adjacency, Node n, std::int64_t arcs_hint,
              Neighbours&& neighbours_of) {
  offsets.assign(1, 0);
  offsets.reserve(static_cast<std::size_t>(n) + 1);
  adjacency.reserve(static_cast<std::size_t>(arcs_hint));
  for (Node v = 0; v < n; ++v) {
    const auto first = adjacency.size();
    neighbours_of(v, adjacency);
    std::sort(adjacency.begin() + static_cast<std::ptrdiff_t>(first), adjacency.end());
    adjacency.erase(std::unique(adjacency.begin() + static_cast<std::ptrdiff_t>(first), adjacency.end()),
                    adjacency.end());
    offsets.push_back(static_cast<std::int64_t>(adjacency.size()));
  }
}

}  // namespace

VirtualNetwork VirtualNetwork::complete(Node n) {
  require_fits(n, std::int64_t{n} * (n - 1), "complete graph");
  VirtualNetwork g;
  g.kind_ = NetworkKind::complete;
  g.name_ = "complete";
  fill_csr(g.offsets_, g.adjacency_, n, std::int64_t{n} * (n - 1), [n](Node v, std::vector<Node>& out) {
    for (Node u = 0; u < n; ++u) {
      if (u != v) out.push_back(u);
    }
  });
  return g;
}

VirtualNetwork VirtualNetwork::hypercube(int d) {
  if (d < 0 || d > 24) throw InvalidArgument("hypercube: dimension " + std::to_string(d) + " is outside 0..24");
  const Node n = Node{1} << d;
  require_fits(n, std::int64_t{n} * d, "hypercube");
  VirtualNetwork g;
  g.kind_ = NetworkKind::hypercube;
  g.name_ = "hypercube:" + std::to_string(d);
  g.dimension_ = d;
  fill_csr(g.offsets_, g.adjacency_, n, std::int64_t{n} * d, [d](Node v, std::vector<Node>& out) {
    for (int i = 0; i < d; ++i) out.push_back(v ^ (Node{1} << i));
  });
  return g;
}

VirtualNetwork VirtualNetwork::torus(std::vector<Node> sides) {
  if (sides.empty()) throw InvalidArgument("torus: no sides given");
  std::int64_t n = 1;
  std::string name = "torus:";
  for (std::size_t i = 0; i < sides.size(); ++i) {
    if (sides[i] < 1) throw InvalidArgument("torus: side " + std::to_string(sides[i]) + " is not positive");
    n *= sides[i];
    if (n > kMaxNodes) require_fits(n, 0, "torus");
    if (i > 0) name += 'x';
    name += std::to_string(sides[i]);
  }
  require_fits(n, n * 2 * static_cast<std::int64_t>(sides.size()), "torus");
  VirtualNetwork g;
  g.kind_ = NetworkKind::torus;
  g.name_ = name;
  g.dimension_ = static_cast<int>(sides.size());
  g.sides_ = sides;
  fill_csr(g.offsets_, g.adjacency_, static_cast<Node>(n), n * 2 * g.dimension_,
           [&sides](Node v, std::vector<Node>& out) {
             Node stride = 1;
             for (Node side : sides) {
               const Node digit = (v / stride) % side;
               if (side > 1) {
                 out.push_back(v - digit * stride + ((digit + 1) % side) * stride);
                 out.push_back(v - digit * stride + ((digit + side - 1) % side) * stride);
               }
               stride *= side;
             }
           });
  return g;
}

VirtualNetwork VirtualNetwork::tree(Node n, int k) {
  if (k < 1) throw InvalidArgument("tree: arity " + std::to_string(k) + " is not positive");
  require_fits(n, 2 * (std::int64_t{n} - 1), "tree");
  VirtualNetwork g;
  g.kind_ = NetworkKind::tree;
  g.name_ = "tree:" + std::to_string(k);
  g.arity_ = k;
  fill_csr(g.offsets_, g.adjacency_, n, 2 * (std::int64_t{n} - 1), [n, k](Node v, std::vector<Node>& out) {
    if (v > 0) out.push_back((v - 1) / k);
    for (std::int64_t c = std::int64_t{v} * k + 1; c <= std::int64_t{v} * k + k && c < n; ++c) {
      out.push_back(static_cast<Node>(c));
    }
  });
  return g;
}

VirtualNetwork VirtualNetwork::from_edges(Node n, std::span<const std::pair<Node, Node>> edges, std::string name) {
  require_fits(n, 2 * static_cast<std::int64_t>(edges.size()), name);
  std::vector<std::int64_t> degree(static_cast<std::size_t>(n) + 1, 0);
  for (auto [u, v] : edges) {
    if (u < 0 || u >= n || v < 0 || v >= n) {
      throw InvalidArgument(name + ": edge (" + std::to_string(u) + ", " + std::to_string(v) +
                            ") has a node outside 0.." + std::to_string(n - 1));
    }
    if (u != v) ++degree[u], ++degree[v];
  }
  // Counting sort into CSR, then each list sorted and deduplicated in place.
  std::vector<std::int64_t> start(static_cast<std::size_t>(n) + 1, 0);
  std::partial_sum(degree.begin(), degree.end() - 1, start.begin() + 1);
  std::vector<Node> raw(static_cast<std::size_t>(start[n]));
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (auto [u, v] : edges) {
    if (u != v) raw[fill[u]++] = v, raw[fill[v]++] = u;
  }
  VirtualNetwork g;
  g.kind_ = NetworkKind::graph;
  g.name_ = std::move(name);
  fill_csr(g.offsets_, g.adjacency_, n, start[n], [&](Node v, std::vector<Node>& out) {
    out.insert(out.end(), raw.begin() + start[v], raw.begin() + start[v + 1]);
  });
  g.require_connected();
  return g;
}

void VirtualNetwork::require_connected() const {
  const auto d = distances_from(0);
  const auto it = std::find(d.begin(), d.end(), -1);
  if (it != d.end()) {
    throw InvalidArgument(name_ + ": the graph is not connected (node " + std::to_string(it - d.begin()) +
                          " cannot be reached from node 0)");
  }
}

std::int64_t VirtualNetwork::arc(Node u, Node v) const noexcept {
  if (!contains(u) || !contains(v)) return -1;
  if (kind_ == NetworkKind::complete) {
    // Neighbours of u are 0..n-1 without u: the position of v is v or v - 1.
    return u == v ? -1 : offsets_[u] + (v < u ? v : v - 1);
  }
  const auto list = neighbours(u);
  const auto it = std::lower_bound(list.begin(), list.end(), v);
  return it != list.end() && *it == v ? offsets_[u] + (it - list.begin()) : -1;
}

std::vector<std::int32_t> VirtualNetwork::distances_from(Node s) const {
  std::vector<std::int32_t> dist(static_cast<std::size_t>(size()), -1);
  std::vector<Node> frontier{s}, next;
  dist[s] = 0;
  for (std::int32_t d = 1; !frontier.empty(); ++d) {
    next.clear();
    for (Node v : frontier) {
      for (Node u : neighbours(v)) {
        if (dist[u] < 0) dist[u] = d, next.push_back(u);
      }
    }
    frontier.swap(next);
  }
  return dist;
}

int VirtualNetwork::diameter() const {
  if (diameter_ >= 0) return diameter_;
  switch (kind_) {
    case NetworkKind::complete:
      diameter_ = size() > 1 ? 1 : 0;
      break;
    case NetworkKind::hypercube:
      diameter_ = dimension_;
      break;
    case NetworkKind::torus:
      diameter_ = 0;
      for (Node side : sides_) diameter_ += side / 2;
      break;
    default: {
      // Trees: the farthest node from a farthest node (exact on trees); graphs: all-pairs BFS.
      int best = 0;
      if (kind_ == NetworkKind::tree) {
        const auto d0 = distances_from(0);
        const Node far = static_cast<Node>(std::max_element(d0.begin(), d0.end()) - d0.begin());
        const auto d1 = distances_from(far);
        best = *std::max_element(d1.begin(), d1.end());
      } else {
        for (Node s = 0; s < size(); ++s) {
          const auto d = distances_from(s);
          best = std::max(best, *std::max_element(d.begin(), d.end()));
        }
      }
      diameter_ = best;
    }
  }
  return diameter_;
}

namespace {

// A value is ignored (any stored entry is a link) but must still be a number.
void check_value(const MatrixMarketLines& lines, const std::string& token) {
  double v = 0;
  const auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || p != token.data() + token.size())
    lines.fail("value '" + printable(token) + "' is not a number");
}

// Whether the entries are "row column" (pattern) rather than "row column value".
bool read_adjacency_header(const MatrixMarketLines& lines) {
  auto h = lines.tokens();
  for (auto& t : h) std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (h.size() != 5 || h[0] != "%%matrixmarket" || h[1] != "matrix" || h[2] != "coordinate" ||
      (h[3] != "pattern" && h[3] != "integer" && h[3] != "real") || (h[4] != "general" && h[4] != "symmetric")) {
    lines.fail("expected '%%MatrixMarket matrix coordinate pattern|integer|real general|symmetric', found '" +
               printable(lines.text()) + "'");
  }
  return h[3] == "pattern";
}

}  // namespace

VirtualNetwork VirtualNetwork::read_matrix_market(std::istream& in, const std::string& source) {
  MatrixMarketLines lines(in, source);
  if (!lines.next()) lines.fail_at(1, "empty file: expected a %%MatrixMarket header");
  const bool pattern = read_adjacency_header(lines);
  const auto [rows, cols, entries, rows_text, cols_text] = lines.next_size();
  if (rows != cols) lines.fail("an adjacency matrix is square, this one is " + rows_text + " x " + cols_text);
  if (rows == 0 || rows > static_cast<std::uint64_t>(kMaxNodes)) {
    lines.fail("node count " + rows_text + " is outside 1.." + std::to_string(kMaxNodes));
  }
  if (entries > static_cast<std::uint64_t>(kMaxArcs)) {
    lines.fail(std::to_string(entries) + " entries do not fit in memory (at most " + std::to_string(kMaxArcs) + ")");
  }
  const std::size_t fields = pattern ? 2 : 3;
  std::vector<std::pair<Node, Node>> edges;
  edges.reserve(entries);
  for (auto t = lines.next_data(); !t.empty(); t = lines.next_data()) {
    if (t.size() != fields) {
      lines.fail(std::string(pattern ? "expected 'row column'" : "expected 'row column value'") + ", found '" +
                 printable(lines.text()) + "'");
    }
    const std::uint64_t r = lines.number(t[0], "row");
    const std::uint64_t c = lines.number(t[1], "column");
    if (!pattern) check_value(lines, t[2]);
    if (r < 1 || r > rows) lines.fail("row " + t[0] + " is outside 1.." + std::to_string(rows));
    if (c < 1 || c > cols) lines.fail("column " + t[1] + " is outside 1.." + std::to_string(cols));
    if (edges.size() == entries) lines.fail("more entries than the " + std::to_string(entries) + " announced");
    edges.emplace_back(static_cast<Node>(r - 1), static_cast<Node>(c - 1));
  }
  if (edges.size() != entries) {
    lines.fail("the header announces " + std::to_string(entries) + " entries, the file has " +
               std::to_string(edges.size()));
  }
  return from_edges(static_cast<Node>(rows), edges, source);
}

VirtualNetwork VirtualNetwork::read_matrix_market_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument(printable(path) + ": cannot open the adjacency file");
  return read_matrix_market(in, path);
}

}  // namespace switchyard::primitives
