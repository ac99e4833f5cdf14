// RS_N and RS_NH, Wang-Lin-Ranka Fig. 4 and §3.3.
//
// RS_N is the same group's random scheduling over CCOM as CGM ([11] there is
// the CGM paper) but with more randomness per phase, as Fig. 4 leaves the
// choice inside a row open ("try to find an active entry"):
//   - CGM visits rows x, x+1, ... from one random start row; RS_N visits them in
//     a fresh uniformly random order every phase. Only rows with messages left
//     are shuffled: rows without any pick nothing, and the relative order of the
//     others is uniform either way.
//   - CGM takes the first free destination in CCOM order; RS_N tries the row's
//     entries in a random order (an incremental Fisher-Yates, one draw per try)
//     and takes the first whose receiver is free.
//
// RS_NH keeps each row's pending messages in a max-heap on remaining bytes
// (ties broken by the random CCOM order) and tries them largest first. Once
// the phase's (src, dst) pairs are picked, the phase gets a cutoff: the median
// of the picked messages' remaining sizes (the lower median for an even count).
// A pick above the cutoff sends only `cutoff` bytes, from its current offset,
// and goes back into its row's heap with the rest. The phase then costs the
// cutoff instead of its largest message (narrowing the spread of sizes inside a
// phase is the point of §3.3), at the price of more phases. The median rather
// than a lower quantile bounds that price: at most half the picks of a phase
// are split. Measured on the test set 2 pattern (sizes 1..32 units, n = 32 to
// 512, d = 4 to 31): the median gives 0.61-0.71 of RS_N's makespan_bytes (within
// 3-13% of the max-load lower bound) with 2.5-4x RS_N's phases; the heap order
// without any split gives 0.74-0.93 at RS_N's phase count, which is what the
// paper's RS_NH phase counts (Tables 5 and 6) suggest its cutoff was close to.

#include <algorithm>
#include <random>

#include "scheduler_support.hpp"
#include "switchyard/schedulers/ccom.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

namespace {

std::vector<Rank> rows_with_messages(const CompactMatrix& c) {
  std::vector<Rank> rows;
  rows.reserve(c.processes);
  for (Rank i = 0; i < c.processes; ++i) {
    if (c.length[i] != 0) rows.push_back(i);
  }
  return rows;
}

}  // namespace

Schedule schedule_rsn(const CommMatrix& m, std::uint64_t seed) {
  const Rank n = m.size();
  Schedule s{n, "rsn", {}};
  CompactMatrix c = compact(m, seed, false);
  std::uint64_t remaining = m.messages();
  if (remaining == 0) return s;

  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> stamp(n, 0);  // receiver y is taken in phase p iff stamp[y] == p
  std::vector<Rank> active = rows_with_messages(c);
  detail::PhaseRecorder out(m, std::size_t{c.width} * 2 + 16);
  for (std::uint32_t phase = 1; remaining != 0; ++phase) {
    detail::shuffle(active.data(), active.size(), rng);
    for (const Rank x : active) {
      std::uint32_t* const dst = c.dst.data() + std::size_t{x} * c.width;
      std::uint32_t* const slot = c.slot.data() + std::size_t{x} * c.width;
      const std::uint32_t len = c.length[x];
      for (std::uint32_t t = 0; t < len; ++t) {
        const auto r = static_cast<std::uint32_t>(t + detail::below(rng, len - t));
        std::swap(dst[t], dst[r]);
        std::swap(slot[t], slot[r]);
        const std::uint32_t y = dst[t];
        if (stamp[y] == phase) continue;
        stamp[y] = phase;
        out.add(x, y, slot[t]);
        dst[t] = dst[len - 1];
        slot[t] = slot[len - 1];
        c.length[x] = len - 1;
        --remaining;
        break;
      }
    }
    out.end_phase();
    std::erase_if(active, [&](Rank x) { return c.length[x] == 0; });
  }
  s.phases = out.take();
  return s;
}

namespace {

struct Pending {
  std::uint64_t remaining = 0;
  std::uint64_t offset = 0;
  Rank dst = 0;
  std::uint32_t key = 0;  // position in the shuffled CCOM row: a random tie-break
};

bool smaller(const Pending& a, const Pending& b) {
  return a.remaining != b.remaining ? a.remaining < b.remaining : a.key < b.key;
}

struct Pick {
  Rank src = 0;
  Pending message;
};

}  // namespace

Schedule schedule_rsnh(const CommMatrix& m, std::uint64_t seed) {
  const Rank n = m.size();
  Schedule s{n, "rsnh", {}};
  const CompactMatrix c = compact(m, seed, false);
  std::uint64_t remaining = m.messages();
  if (remaining == 0) return s;

  // Row x's heap occupies [x * width, x * width + length[x]) of `heaps`.
  const std::uint32_t width = c.width;
  std::vector<Pending> heaps(std::size_t{n} * width);
  std::vector<std::uint32_t> length = c.length;
  for (Rank x = 0; x < n; ++x) {
    Pending* const h = heaps.data() + std::size_t{x} * width;
    const auto row = m.row(x);
    for (std::uint32_t k = 0; k < length[x]; ++k) {
      const std::size_t at = std::size_t{x} * width + k;
      h[k] = Pending{row[c.slot[at]].bytes, 0, c.dst[at], k};
    }
    std::make_heap(h, h + length[x], smaller);
  }

  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> stamp(n, 0);
  std::vector<Rank> active = rows_with_messages(c);
  std::vector<Pick> picks;
  picks.reserve(n);
  std::vector<std::uint64_t> sizes;
  sizes.reserve(n);
  s.phases.reserve(std::size_t{width} * 2 + 16);
  for (std::uint32_t phase = 1; remaining != 0; ++phase) {
    detail::shuffle(active.data(), active.size(), rng);
    picks.clear();
    for (const Rank x : active) {
      Pending* const h = heaps.data() + std::size_t{x} * width;
      const std::uint32_t old = length[x];
      // Pop largest first; the blocked ones collect behind the shrinking heap.
      std::uint32_t len = old;
      bool found = false;
      while (len != 0 && !found) {
        std::pop_heap(h, h + len, smaller);
        --len;
        found = stamp[h[len].dst] != phase;
      }
      std::uint32_t keep = old;
      if (found) {
        stamp[h[len].dst] = phase;
        picks.push_back(Pick{x, h[len]});
        h[len] = h[old - 1];
        keep = old - 1;
      }
      for (std::uint32_t i = len + 1; i <= keep; ++i) std::push_heap(h, h + i, smaller);
      length[x] = keep;
    }

    sizes.clear();
    for (const Pick& p : picks) sizes.push_back(p.message.remaining);
    const auto median = sizes.begin() + static_cast<std::ptrdiff_t>((sizes.size() - 1) / 2);
    std::nth_element(sizes.begin(), median, sizes.end());
    const std::uint64_t cutoff = *median;

    Phase& transfers = s.phases.emplace_back();
    transfers.reserve(picks.size());
    for (Pick& p : picks) {
      Pending& msg = p.message;
      const std::uint64_t bytes = std::min(msg.remaining, cutoff);
      transfers.push_back(Transfer{p.src, msg.dst, msg.offset, bytes});
      if (bytes == msg.remaining) {
        --remaining;
        continue;
      }
      msg.remaining -= bytes;
      msg.offset += bytes;
      Pending* const h = heaps.data() + std::size_t{p.src} * width;
      h[length[p.src]++] = msg;
      std::push_heap(h, h + length[p.src], smaller);
    }
    std::erase_if(active, [&](Rank x) { return length[x] == 0; });
  }
  return s;
}

}  // namespace switchyard::schedulers
