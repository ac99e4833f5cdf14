// CGM, Ranka-Wang-Fox Figs. 5 and 6.
//
// Each iteration (phase) starts at a random row x and visits rows x, x+1, ...
// mod n once. Along row x it scans CCOM(x, 0..prt(x)) for the first destination
// y whose recvl(y) is still free; on success it moves CCOM(x, prt(x)) into the
// emptied slot and decrements prt(x), so the active entries stay contiguous.
//
// Speed: CCOM is one flat array; recvl is a per-process phase stamp (y is taken
// in phase p iff stamp[y] == p), so a phase starts without an O(n) clear; the
// transfers go to a pre-sized scratch phase. The loop allocates nothing but
// the output phases (see PhaseRecorder).

#include <random>

#include "scheduler_support.hpp"
#include "switchyard/schedulers/ccom.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

Schedule schedule_cgm(const CommMatrix& m, std::uint64_t seed, bool parallel) {
  const Rank n = m.size();
  Schedule s{n, "cgm", {}};
  CompactMatrix c = compact(m, seed, parallel);
  const std::uint64_t remaining = m.messages();
  if (remaining == 0) return s;

  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> stamp(n, 0);
  detail::PhaseRecorder out(m, std::size_t{c.width} * 2 + 16);
  const std::uint32_t width = c.width;
  std::uint32_t* const dst = c.dst.data();
  std::uint32_t* const slot = c.slot.data();
  std::uint32_t* const length = c.length.data();

  detail::masking_phases(n, remaining, rng, out, [&](Rank x, std::uint32_t phase) {
    std::uint32_t* const row_dst = dst + std::size_t{x} * width;
    const std::uint32_t len = length[x];
    // Each row's scan ends in a mispredicted branch, after which the next
    // row's first load would wait on L2: fetch the head two rows ahead.
    const Rank ahead = x + 2 < n ? x + 2 : (x + 2 - n) % n;
    __builtin_prefetch(dst + std::size_t{ahead} * width);
    for (std::uint32_t z = 0; z < len; ++z) {
      const std::uint32_t y = row_dst[z];
      if (stamp[y] == phase) continue;
      stamp[y] = phase;
      std::uint32_t* const row_slot = slot + std::size_t{x} * width;
      out.add(x, y, row_slot[z]);
      row_dst[z] = row_dst[len - 1];
      row_slot[z] = row_slot[len - 1];
      length[x] = len - 1;
      return true;
    }
    return false;
  });
  s.phases = out.take();
  return s;
}

}  // namespace switchyard::schedulers
