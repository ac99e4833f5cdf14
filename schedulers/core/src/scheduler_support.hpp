#pragma once
// Private helpers shared by the scheduler implementations.

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "switchyard/schedulers/schedule.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::schedulers::detail {

// The per-row generator of the CCOM compaction is SplitMix64: a row shuffles
// only d entries, and constructing a std::mt19937_64 (2.5 KB of state, seeded
// and twisted before its first output) costs so much that for n = 512 rows
// it would take three quarters of CGM's time budget (bench_schedulers'
// target; docs/benchmarks.md, "Figures behind the schedulers' comments").
// It is seeded per row from a mt19937_64 draw.
using switchyard::SplitMix64;

// A uniform draw from 0..bound-1 (bound > 0) with Lemire's multiply-and-reject
// method. std::uniform_int_distribution would do, but its algorithm is up to the
// standard library: this keeps a seed's schedule the same on every toolchain.
template <class Rng>
std::uint64_t below(Rng& rng, std::uint64_t bound) {
  __extension__ using u128 = unsigned __int128;
  u128 product = u128{rng()} * bound;
  auto low = static_cast<std::uint64_t>(product);
  if (low < bound) {
    const std::uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = u128{rng()} * bound;
      low = static_cast<std::uint64_t>(product);
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

// Fisher-Yates over v[0..count).
template <class T, class Rng>
void shuffle(T* v, std::size_t count, Rng& rng) {
  for (std::size_t i = count; i > 1; --i) std::swap(v[i - 1], v[below(rng, i)]);
}

// A well-mixed function of x (the SplitMix64 finaliser), and the seed of an
// independent stream of a seed (splitmix64.hpp's): neighbouring samples get
// unrelated mt19937_64 states.
inline std::uint64_t mix(std::uint64_t x) { return switchyard::splitmix64(x); }
using switchyard::stream_seed;

// Collects the phases of a scheduler that sends whole messages (GM, CGM, RS_N).
// The current phase is gathered in a scratch buffer sized once for the largest
// possible phase (one pick per process), so the scheduling loops allocate no
// working memory; the only allocation per phase is the output phase itself, made
// once at its exact size. (Collecting all phases in one flat buffer and
// splitting it at the end touches twice the memory.)
//
// A pick names its message by its index in m.row(src); the sizes are fetched
// when the phase ends, in one pass of independent loads. Fetched inside the scan
// loop, each is a cache miss that loop waits on (m's entries, 16 bytes each,
// 1 MiB for n = 512, d = 128, do not stay in cache beside CCOM): CGM took about
// 10% longer that way.
class PhaseRecorder {
 public:
  PhaseRecorder(const CommMatrix& m, std::size_t phases_hint) : rows_(m.size()) {
    for (Rank i = 0; i < m.size(); ++i) rows_[i] = m.row(i).data();
    picks_.reserve(m.size());
    phases_.reserve(phases_hint);
  }
  void add(Rank src, Rank dst, std::uint32_t slot) { picks_.push_back(Pick{src, dst, slot}); }
  void end_phase() {
    Phase& phase = phases_.emplace_back();
    phase.reserve(picks_.size());
    for (const Pick& p : picks_) phase.push_back(Transfer{p.src, p.dst, 0, rows_[p.src][p.slot].bytes});
    picks_.clear();
  }
  std::vector<Phase> take() { return std::move(phases_); }

 private:
  struct Pick {
    Rank src, dst;
    std::uint32_t slot;
  };
  std::vector<const MatrixEntry*> rows_;
  std::vector<Pick> picks_;
  std::vector<Phase> phases_;
};

// The outer loop of GM (Fig. 4) and CGM (Fig. 6): each phase starts at a
// random row and gives every row, in cyclic order, one chance to claim a
// receiver that is still free in the phase. try_row(x, phase) returns whether
// row x claimed one; `remaining` counts the messages still to schedule.
template <class Rng, class TryRow>
void masking_phases(Rank n, std::uint64_t remaining, Rng& rng, PhaseRecorder& out, TryRow&& try_row) {
  for (std::uint32_t phase = 1; remaining != 0; ++phase) {
    auto x = static_cast<Rank>(below(rng, n));
    for (Rank k = 0; k < n; ++k) {
      if (try_row(x, phase)) --remaining;
      x = x + 1 == n ? 0 : x + 1;
    }
    out.end_phase();
  }
}

}  // namespace switchyard::schedulers::detail
