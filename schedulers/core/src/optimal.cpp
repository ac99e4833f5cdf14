#include "switchyard/schedulers/optimal.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "bipartite.hpp"
#include "open_shop.hpp"

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
    const auto it =
        std::lower_bound(row.begin(), row.end(), dst, [](const MatrixEntry& e, Rank d) { return e.peer < d; });
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
    if (pieces_degree(m, mid) <= cap)
      hi = mid;
    else
      lo = mid + 1;
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

// Whether every message has the same size b: then the lower bound is b·Δ and
// the Δ-colouring of whole messages reaches it, in O(E log Δ), where the open
// shop, every line tight, repairs a perfect matching per phase (the same Δ
// phases at n = 512, d = 128, but over 20 times the CPU time;
// docs/benchmarks.md, "Figures behind the schedulers' comments").
bool one_message_size(const CommMatrix& m) {
  std::uint64_t size = 0;
  for (Rank i = 0; i < m.size(); ++i)
    for (const MatrixEntry& e : m.row(i)) {
      if (size != 0 && e.bytes != size) return false;
      size = e.bytes;
    }
  return true;
}

}  // namespace

Schedule schedule_optimal(const CommMatrix& m) { return Schedule{m.size(), "optimal", colour_pieces(m, 0)}; }

Schedule schedule_optimal_bytes(const CommMatrix& m, const OptimalBytesOptions& options) {
  std::vector<Phase> phases = one_message_size(m) ? colour_pieces(m, 0) : detail::open_shop_phases(m);
  const std::uint64_t cap = std::max(options.max_phases, m.max_degree());
  if (options.max_phases != 0 && phases.size() > cap) phases = cap_phases(m, phases, cap);
  return Schedule{m.size(), "optimal-bytes", std::move(phases)};
}

}  // namespace switchyard::schedulers
