// LP, Ranka-Wang-Fox Fig. 3.
//
// n a power of two: phase k (k = 1..n-1) carries every message i -> i XOR k,
// exactly n - 1 phases, empty ones included, because the paper's LP runs all
// n - 1 steps whatever the matrix holds. Each phase is a pairwise exchange.
//
// Other n: phase k (k = 1..n-1) carries every message i -> (i + k) mod n, i.e.
// the message i -> j goes in phase (j - i) mod n. Also n - 1 phases, each a full
// cyclic shift and so contention-free. Chosen over the XOR schedule padded to
// the next power of two N (N - 1 phases, up to 2n - 3, many of them partial)
// because it keeps LP's cost at n - 1 phases for every n; what it gives up is
// the pairwise exchange (i sends to i + k but receives from i - k).
//
// Self-messages (i -> i) fit in no phase k >= 1 (there i's send and receive
// belong to its partner), so when the matrix has any they all go in one extra
// phase placed first: n phases then, n - 1 without self-messages.
// n = 1 therefore has one phase if it sends to itself and none otherwise; the
// empty matrix keeps its n - 1 empty phases.

#include <bit>

#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

Schedule schedule_lp(const CommMatrix& m) {
  const Rank n = m.size();
  Schedule s{n, "lp", {}};
  const bool xor_pairs = std::has_single_bit(n);
  bool self = false;
  for (Rank i = 0; i < n && !self; ++i) self = m.at(i, i) != 0;
  const std::size_t first = self ? 1 : 0;
  auto phase_of = [&](Rank i, Rank j) -> std::size_t {
    if (j == i) return 0;
    return first + (xor_pairs ? (i ^ j) : (j >= i ? j - i : j + n - i)) - 1;
  };
  // Counted first, so that each phase is allocated once, at its final size.
  std::vector<std::size_t> count(first + (n > 1 ? n - 1 : 0), 0);
  for (Rank i = 0; i < n; ++i) {
    for (const auto& e : m.row(i)) ++count[phase_of(i, e.peer)];
  }
  s.phases.resize(count.size());
  for (std::size_t p = 0; p < count.size(); ++p) s.phases[p].reserve(count[p]);
  for (Rank i = 0; i < n; ++i) {
    for (const auto& e : m.row(i)) s.phases[phase_of(i, e.peer)].push_back(Transfer{i, e.peer, 0, e.bytes});
  }
  return s;
}

}  // namespace switchyard::schedulers
