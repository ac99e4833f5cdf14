// GM, Ranka-Wang-Fox Fig. 4. Each iteration (phase) starts at a random row x
// and visits rows x, x+1, ... mod n; row x takes the first column y, in column
// order, with COM(x, y) pending and recvl(y) free.
//
// The paper's COM is a dense n x n array scanned from column 0: 4 n^2 bytes
// and O(n^2) per phase, 40 GB at n = 100 000 for a single message. The same
// rule is kept on the sparse row (CommMatrix rows are in column order), with
// a flag per message once scheduled: O(n + messages) memory, O(n + messages)
// per phase, and the very schedules the dense scan makes.

#include <random>

#include "scheduler_support.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

Schedule schedule_gm(const CommMatrix& m, std::uint64_t seed) {
  const Rank n = m.size();
  Schedule s{n, "gm", {}};
  const std::uint64_t remaining = m.messages();
  if (remaining == 0) return s;

  // Row x's messages are scheduled[first[x] .. first[x + 1]); skip[x] of them,
  // from the front, are known to be scheduled, so a row whose front went is not rescanned.
  std::vector<std::uint64_t> first(std::size_t{n} + 1, 0);
  for (Rank x = 0; x < n; ++x) first[x + 1] = first[x] + m.row(x).size();
  std::vector<bool> scheduled(remaining, false);
  std::vector<std::uint32_t> skip(n, 0);

  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> stamp(n, 0);  // recvl(y) is set in phase p iff stamp[y] == p
  detail::PhaseRecorder out(m, m.max_degree() * 2 + 16);
  detail::masking_phases(n, remaining, rng, out, [&](Rank x, std::uint32_t phase) {
    const auto row = m.row(x);
    const std::uint64_t base = first[x];
    while (skip[x] < row.size() && scheduled[base + skip[x]]) ++skip[x];
    for (auto k = skip[x]; k < row.size(); ++k) {
      const Rank y = row[k].peer;
      if (scheduled[base + k] || stamp[y] == phase) continue;
      stamp[y] = phase;
      scheduled[base + k] = true;
      out.add(x, y, k);
      return true;
    }
    return false;
  });
  s.phases = out.take();
  return s;
}

}  // namespace switchyard::schedulers
