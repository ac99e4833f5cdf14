#include "switchyard/schedulers/optimal.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "bipartite.hpp"

namespace switchyard::schedulers {
namespace {

using detail::BipartiteEdge;

// Index of every matrix entry in row-major order: entry k of row i is
// first[i] + k. Lets the byte-range bookkeeping live in flat arrays.
struct EntryIndex {
  explicit EntryIndex(const CommMatrix& m) : first(m.size() + std::size_t{1}, 0) {
    for (Rank i = 0; i < m.size(); ++i) first[i + 1] = first[i] + m.row(i).size();
  }
  std::size_t of(const CommMatrix& m, Rank src, Rank dst) const {
    const auto row = m.row(src);
    const auto it = std::lower_bound(row.begin(), row.end(), dst,
                                     [](const MatrixEntry& e, Rank d) { return e.peer < d; });
    return first[src] + static_cast<std::size_t>(it - row.begin());
  }
  std::vector<std::size_t> first;
};

// Colours the messages given as (src, dst, bytes, offset) transfers and turns
// each colour into a phase: exactly Δ phases for the transfers' Δ.
std::vector<Phase> colour_into_phases(Rank n, const std::vector<Transfer>& transfers) {
  std::vector<BipartiteEdge> edges;
  edges.reserve(transfers.size());
  for (const Transfer& t : transfers) edges.push_back(BipartiteEdge{t.src, t.dst});
  const std::vector<std::uint32_t> colour = detail::colour_edges(n, n, edges);
  const std::uint32_t phases = colour.empty() ? 0 : *std::max_element(colour.begin(), colour.end()) + 1;
  std::vector<std::size_t> count(phases, 0);
  for (std::uint32_t c : colour) ++count[c];
  std::vector<Phase> out(phases);
  for (std::uint32_t c = 0; c < phases; ++c) out[c].reserve(count[c]);
  for (std::size_t k = 0; k < transfers.size(); ++k) out[colour[k]].push_back(transfers[k]);
  return out;
}

// The uncapped Birkhoff-von Neumann decomposition. The byte matrix B is
// topped up with "slack" bytes until every row and column sums to L, the
// largest line sum: then B/L is doubly stochastic, so (Birkhoff-von Neumann,
// via Hall's theorem) the positive entries always hold a perfect matching.
// Each step takes one such matching and moves δ = its smallest remaining entry
// along it, which zeroes at least one entry and lowers every line sum by δ.
// The steps' δ add up to L, and a phase's largest real transfer is at most its
// δ, so the makespan is at most L, which is also a lower bound: exactly L.
// An entry's real bytes go first and its slack last, so a transfer is always
// one contiguous range starting where the previous piece ended.
std::vector<Phase> decompose(const CommMatrix& m) {
  const Rank n = m.size();
  const std::uint64_t load = m.max_load_bytes();
  if (load == 0) return {};

  std::vector<std::uint64_t> row_slack(n, load), column_slack(n, load);
  for (Rank i = 0; i < n; ++i)
    for (const MatrixEntry& e : m.row(i)) {
      row_slack[i] -= e.bytes;
      column_slack[e.peer] -= e.bytes;
    }
  // Slack entries: pairing row and column deficits in order adds at most
  // 2n - 1 entries, and in each row they come by increasing column.
  std::vector<std::vector<MatrixEntry>> slack(n);
  for (Rank i = 0, j = 0;;) {
    while (i < n && row_slack[i] == 0) ++i;
    while (j < n && column_slack[j] == 0) ++j;
    if (i == n || j == n) break;
    const std::uint64_t add = std::min(row_slack[i], column_slack[j]);
    slack[i].push_back(MatrixEntry{j, add});
    row_slack[i] -= add;
    column_slack[j] -= add;
  }

  // Entries of the topped-up matrix: real bytes and capacity (real + slack).
  std::vector<Rank> column;
  std::vector<std::uint64_t> real, capacity;
  detail::LeftAdjacency adj;
  adj.offsets.push_back(0);
  for (Rank i = 0; i < n; ++i) {
    const auto row = m.row(i);
    std::size_t a = 0, b = 0;
    while (a < row.size() || b < slack[i].size()) {
      const bool take_real = b == slack[i].size() || (a < row.size() && row[a].peer <= slack[i][b].peer);
      const bool take_slack = a == row.size() || (b < slack[i].size() && slack[i][b].peer <= row[a].peer);
      const Rank j = take_real ? row[a].peer : slack[i][b].peer;
      const std::uint64_t r = take_real ? row[a++].bytes : 0;
      const std::uint64_t s = take_slack ? slack[i][b++].bytes : 0;
      adj.arcs.push_back(detail::Arc{j, static_cast<std::uint32_t>(column.size())});
      column.push_back(j);
      real.push_back(r);
      capacity.push_back(r + s);
    }
    // Largest first: the matchings then favour big entries, whose δ lasts.
    std::sort(adj.arcs.begin() + adj.offsets.back(), adj.arcs.end(),
              [&](const detail::Arc& a, const detail::Arc& b) { return capacity[a.edge] > capacity[b.edge]; });
    adj.offsets.push_back(static_cast<std::uint32_t>(adj.arcs.size()));
  }

  std::vector<std::uint64_t> taken(capacity.size(), 0);
  auto alive = [&](std::uint32_t e) { return taken[e] < capacity[e]; };
  detail::BipartiteMatcher matcher(n, n);
  if (matcher.maximize(adj, alive) != n) throw std::logic_error("switchyard: optimal-bytes found no perfect matching");

  std::vector<Phase> phases;
  std::vector<Rank> exhausted;
  auto smallest = [&](const detail::BipartiteMatcher& mt) {
    std::uint64_t delta = load;
    for (Rank i = 0; i < n; ++i) {
      const std::uint32_t e = mt.edge_of(i);
      delta = std::min(delta, capacity[e] - taken[e]);
    }
    return delta;
  };
  for (std::uint64_t remaining = load; remaining != 0;) {
    // Widen the bottleneck: find the perfect matching whose smallest entry
    // is largest, by bisection on the threshold t. Feasibility of "every
    // matched entry >= t" is monotone in t; a probe releases the rows matched
    // below t and re-augments them through entries >= t (by Berge's theorem
    // this succeeds exactly when such a perfect matching exists). A larger δ
    // moves more bytes per phase: on test set 2 (n = 32, d = 8) 27 phases and
    // 2.6 pieces per message instead of 112 and 10; on random sizes 100 times
    // fewer phases. Cost: O(log(largest entry)) probes per phase, each at
    // worst a sweep of the graph.
    std::uint64_t delta = smallest(matcher), infeasible = delta + 1;
    for (Rank i = 0; i < n; ++i)
      for (std::uint32_t k = adj.offsets[i]; k < adj.offsets[i + 1]; ++k)
        infeasible = std::max(infeasible, capacity[adj.arcs[k].edge] - taken[adj.arcs[k].edge] + 1);
    while (infeasible - delta > 1) {
      const std::uint64_t t = delta + (infeasible - delta) / 2;
      detail::BipartiteMatcher wider = matcher;
      auto at_least = [&](std::uint32_t e) { return capacity[e] - taken[e] >= t; };
      for (Rank i = 0; i < n; ++i)
        if (!at_least(matcher.edge_of(i))) wider.release(i);
      bool ok = true;
      for (Rank i = 0; i < n && ok; ++i)
        if (wider.edge_of(i) == detail::kNoVertex) ok = wider.augment_from(i, adj, at_least);
      if (ok) {
        matcher = std::move(wider);
        delta = smallest(matcher);
      } else {
        infeasible = t;
      }
    }
    Phase phase;
    exhausted.clear();
    for (Rank i = 0; i < n; ++i) {
      const std::uint32_t e = matcher.edge_of(i);
      if (taken[e] < real[e]) {
        const std::uint64_t end = std::min(real[e], taken[e] + delta);
        phase.push_back(Transfer{i, column[e], taken[e], end - taken[e]});
      }
      taken[e] += delta;
      if (taken[e] == capacity[e]) exhausted.push_back(i);
    }
    if (!phase.empty()) phases.push_back(std::move(phase));
    remaining -= delta;
    if (remaining == 0) break;
    for (Rank i : exhausted) matcher.release(i);
    for (Rank i : exhausted)
      if (!matcher.augment_from(i, adj, alive))
        throw std::logic_error("switchyard: optimal-bytes lost its perfect matching");
  }
  return phases;
}

// Gives each message's pieces their byte ranges in phase order, so each piece
// starts where the message's previous piece ended.
void assign_offsets(const CommMatrix& m, const EntryIndex& index, std::vector<Phase>& phases) {
  std::vector<std::uint64_t> cursor(index.first.back(), 0);
  for (Phase& p : phases)
    for (Transfer& t : p) {
      std::uint64_t& c = cursor[index.of(m, t.src, t.dst)];
      t.offset = c;
      c += t.bytes;
    }
}

// Every message cut into ceil(bytes / q) near-equal pieces (q = 0: whole),
// then the pieces edge-coloured: as many phases as the most pieces at one process.
std::vector<Phase> colour_pieces(const CommMatrix& m, std::uint64_t q) {
  std::vector<Transfer> pieces;
  pieces.reserve(m.messages());  // exact for whole messages (q = 0)
  for (Rank i = 0; i < m.size(); ++i)
    for (const MatrixEntry& e : m.row(i)) {
      const std::uint64_t k = q == 0 ? 1 : (e.bytes + q - 1) / q;
      for (std::uint64_t r = 0; r < k; ++r) pieces.push_back(Transfer{i, e.peer, 0, e.bytes / k + (r < e.bytes % k)});
    }
  return colour_into_phases(m.size(), pieces);
}

// The phases colour_pieces(m, q) will have, without colouring.
std::uint64_t pieces_degree(const CommMatrix& m, std::uint64_t q) {
  std::vector<std::uint64_t> in(m.size(), 0);
  std::uint64_t most = 0;
  for (Rank i = 0; i < m.size(); ++i) {
    std::uint64_t out = 0;
    for (const MatrixEntry& e : m.row(i)) {
      const std::uint64_t k = (e.bytes + q - 1) / q;
      out += k;
      most = std::max(most, in[e.peer] += k);
    }
    most = std::max(most, out);
  }
  return most;
}

// At most `cap` phases (cap >= Δ), the best found of three families:
// - whole messages, edge-coloured: Δ phases (what `optimal` does);
// - pieces of at most q bytes, edge-coloured, for the smallest q that fits the
//   cap and a few larger ones;
// - the `keep` phases of the full decomposition that move the most bytes, and
//   what the others would have sent as one piece per message, edge-coloured
//   into Δ' <= Δ more phases: keep = cap - Δ always fits, and it grows while
//   the leftovers' Δ' leaves room.
std::vector<Phase> cap_phases(const CommMatrix& m, const std::vector<Phase>& full, std::uint64_t cap) {
  const EntryIndex index(m);
  std::vector<Phase> best = colour_pieces(m, 0);
  std::uint64_t best_makespan = makespan_bytes(best);
  auto consider = [&](std::vector<Phase> phases) {
    if (phases.size() > cap) return;
    const std::uint64_t ms = makespan_bytes(phases);
    if (ms < best_makespan) {
      best_makespan = ms;
      best = std::move(phases);
    }
  };

  std::uint64_t largest = 0;
  for (Rank i = 0; i < m.size(); ++i)
    for (const MatrixEntry& e : m.row(i)) largest = std::max(largest, e.bytes);
  std::uint64_t lo = 1, hi = largest;  // pieces_degree(hi) == Δ <= cap
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (pieces_degree(m, mid) <= cap) hi = mid;
    else lo = mid + 1;
  }
  for (std::uint64_t q = lo; q < largest; q += std::max<std::uint64_t>(1, q / 4)) {
    consider(colour_pieces(m, q));
    if (q >= lo * 2) break;
  }

  std::vector<std::uint64_t> moved(full.size(), 0);
  for (std::size_t p = 0; p < full.size(); ++p)
    for (const Transfer& t : full[p]) moved[p] += t.bytes;
  std::vector<std::size_t> by_bytes(full.size());
  std::iota(by_bytes.begin(), by_bytes.end(), std::size_t{0});
  std::stable_sort(by_bytes.begin(), by_bytes.end(), [&](std::size_t a, std::size_t b) { return moved[a] > moved[b]; });
  auto keep_top = [&](std::size_t keep) {
    std::vector<std::size_t> kept(by_bytes.begin(), by_bytes.begin() + static_cast<std::ptrdiff_t>(keep));
    std::sort(kept.begin(), kept.end());
    std::vector<std::uint64_t> sent(index.first.back(), 0);
    std::vector<Phase> out;
    for (std::size_t p : kept) {
      for (const Transfer& t : full[p]) sent[index.of(m, t.src, t.dst)] += t.bytes;
      out.push_back(full[p]);
    }
    std::vector<Transfer> leftovers;
    for (Rank i = 0; i < m.size(); ++i)
      for (const MatrixEntry& e : m.row(i))
        if (const std::uint64_t left = e.bytes - sent[index.of(m, i, e.peer)]; left != 0)
          leftovers.push_back(Transfer{i, e.peer, 0, left});
    for (Phase& p : colour_into_phases(m.size(), leftovers)) out.push_back(std::move(p));
    return out;
  };
  std::size_t keep = static_cast<std::size_t>(cap - m.max_degree());
  std::vector<Phase> top = keep_top(keep);
  while (top.size() < cap && keep < full.size()) {
    const std::size_t more = std::min<std::size_t>(keep + (cap - top.size()), full.size());
    std::vector<Phase> tried = keep_top(more);
    if (tried.size() > cap) break;
    keep = more;
    top = std::move(tried);
  }
  consider(std::move(top));

  assign_offsets(m, index, best);
  return best;
}

}  // namespace

Schedule schedule_optimal(const CommMatrix& m) { return Schedule{m.size(), "optimal", colour_pieces(m, 0)}; }

Schedule schedule_optimal_bytes(const CommMatrix& m, const OptimalBytesOptions& options) {
  std::vector<Phase> phases = decompose(m);
  const std::uint64_t cap = std::max(options.max_phases, m.max_degree());
  if (options.max_phases != 0 && phases.size() > cap) phases = cap_phases(m, phases, cap);
  return Schedule{m.size(), "optimal-bytes", std::move(phases)};
}

}  // namespace switchyard::schedulers
