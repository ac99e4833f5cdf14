// GM, Ranka-Wang-Fox Fig. 4, kept literal so that its cost is the paper's
// O(n^2) per phase: COM is a dense n x n array and every visited row is scanned
// in column order from column 0. Each iteration starts at a random row x and
// visits rows x, x+1, ... mod n; row x takes the first column y with COM(x, y)
// pending and recvl(y) free. Memory: 4 n^2 bytes (the paper's COM is n x n too).

#include <random>

#include "scheduler_support.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

Schedule schedule_gm(const CommMatrix& m, std::uint64_t seed) {
  const Rank n = m.size();
  Schedule s{n, "gm", {}};
  const std::uint64_t remaining = m.messages();
  if (remaining == 0) return s;

  // COM(x, y): 0 when nothing is pending, else 1 + the message's index in m.row(x).
  std::vector<std::uint32_t> com(std::size_t{n} * n, 0);
  for (Rank x = 0; x < n; ++x) {
    const auto row = m.row(x);
    for (std::uint32_t k = 0; k < row.size(); ++k) com[std::size_t{x} * n + row[k].peer] = k + 1;
  }

  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> stamp(n, 0);  // recvl(y) is set in phase p iff stamp[y] == p
  detail::PhaseRecorder out(m, m.max_degree() * 2 + 16);
  detail::masking_phases(n, remaining, rng, out, [&](Rank x, std::uint32_t phase) {
    std::uint32_t* const row = com.data() + std::size_t{x} * n;
    for (Rank y = 0; y < n; ++y) {
      if (row[y] == 0 || stamp[y] == phase) continue;
      stamp[y] = phase;
      out.add(x, y, row[y] - 1);
      row[y] = 0;
      return true;
    }
    return false;
  });
  s.phases = out.take();
  return s;
}

}  // namespace switchyard::schedulers
