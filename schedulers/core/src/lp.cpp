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
// Self-messages (i -> i) belong to no pairing, but use only i's own send and
// receive: each goes in the first phase in which i neither sends nor receives.
// Only a process busy in all n - 1 phases needs an extra phase, appended last;
// so LP keeps n - 1 phases on the Fig. 7 matrices, which hold self-messages.
// n = 1 has no pairing phases: its self-message, if any, is that extra phase.

#include <bit>

#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::schedulers {

Schedule schedule_lp(const CommMatrix& m) {
  const Rank n = m.size();
  const std::size_t pairing = n > 1 ? n - 1 : 0;
  Schedule s{n, "lp", {}};
  const bool xor_pairs = std::has_single_bit(n);
  auto phase_of = [&](Rank i, Rank j) -> std::size_t {
    return (xor_pairs ? (i ^ j) : (j >= i ? j - i : j + n - i)) - 1;
  };
  // busy[i * pairing + p]: process i sends or receives in pairing phase p.
  std::vector<bool> busy;
  std::vector<std::size_t> self_phase(n, pairing);
  bool self = false;
  for (Rank i = 0; i < n && !self; ++i) self = m.at(i, i) != 0;
  if (self) {
    busy.assign(std::size_t{n} * pairing, false);
    for (Rank i = 0; i < n; ++i) {
      for (const auto& e : m.row(i)) {
        if (e.peer == i) continue;
        const std::size_t p = phase_of(i, e.peer);
        busy[i * pairing + p] = true;
        busy[e.peer * pairing + p] = true;
      }
    }
    for (Rank i = 0; i < n; ++i) {
      if (m.at(i, i) == 0) continue;
      std::size_t p = 0;
      while (p < pairing && busy[i * pairing + p]) ++p;
      self_phase[i] = p;  // == pairing: the extra phase
    }
  }
  auto place = [&](Rank i, Rank j) { return j == i ? self_phase[i] : phase_of(i, j); };
  // Counted first, so that each phase is allocated once, at its final size.
  std::vector<std::size_t> count(pairing + 1, 0);
  for (Rank i = 0; i < n; ++i) {
    for (const auto& e : m.row(i)) ++count[place(i, e.peer)];
  }
  s.phases.resize(count[pairing] ? pairing + 1 : pairing);
  for (std::size_t p = 0; p < s.phases.size(); ++p) s.phases[p].reserve(count[p]);
  for (Rank i = 0; i < n; ++i) {
    for (const auto& e : m.row(i)) s.phases[place(i, e.peer)].push_back(Transfer{i, e.peer, 0, e.bytes});
  }
  return s;
}

}  // namespace switchyard::schedulers
