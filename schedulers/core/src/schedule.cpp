#include "switchyard/schedulers/schedule.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

std::uint64_t Schedule::transfers() const noexcept {
  std::uint64_t n = 0;
  for (const auto& p : phases) n += p.size();
  return n;
}

std::uint64_t makespan_bytes(std::span<const Phase> phases) noexcept {
  std::uint64_t total = 0;
  for (const auto& p : phases) {
    std::uint64_t biggest = 0;
    for (const auto& t : p) biggest = std::max(biggest, t.bytes);
    total += biggest;
  }
  return total;
}

namespace {
[[noreturn]] void invalid(const Schedule& s, const std::string& what) {
  throw InvalidArgument("switchyard: schedule '" + s.scheduler + "' is invalid: " + what);
}
std::string where(std::size_t phase, const Transfer& t) {
  return "phase " + std::to_string(phase) + ", transfer " + std::to_string(t.src) + " -> " + std::to_string(t.dst) +
         " [" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) + ")";
}
}  // namespace

void validate(const Schedule& s, const CommMatrix& m, Contention contention) {
  if (s.processes != m.size()) {
    invalid(s, "it is for " + std::to_string(s.processes) + " processes, the matrix has " + std::to_string(m.size()));
  }
  const Rank n = m.size();
  std::vector<std::uint32_t> sent(n, ~0u), received(n, ~0u);  // last phase each process sent / received in
  // Byte ranges delivered per entry, checked for overlap and coverage afterwards.
  struct Pieces {
    std::size_t last_phase = ~std::size_t{0};
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  };
  std::unordered_map<std::uint64_t, Pieces> pieces;
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    for (const Transfer& t : s.phases[p]) {
      if (t.src >= n || t.dst >= n) invalid(s, where(p, t) + " names a rank outside 0.." + std::to_string(n - 1));
      if (t.bytes == 0) invalid(s, where(p, t) + " moves no bytes");
      const std::uint64_t size = m.at(t.src, t.dst);
      if (size == 0) invalid(s, where(p, t) + " is not a matrix entry");
      if (t.offset > size || t.bytes > size - t.offset) {
        invalid(s, where(p, t) + " runs past the " + std::to_string(size) + "-byte message");
      }
      if (contention == Contention::forbidden) {
        if (sent[t.src] == p)
          invalid(s, where(p, t) + ": process " + std::to_string(t.src) + " sends twice in the phase");
        if (received[t.dst] == p) {
          invalid(s, where(p, t) + ": process " + std::to_string(t.dst) + " receives twice in the phase");
        }
        sent[t.src] = received[t.dst] = static_cast<std::uint32_t>(p);
      }
      Pieces& e = pieces[std::uint64_t{t.src} * n + t.dst];
      // Executors pair a message's first and last piece with its first and last phase.
      if (e.last_phase == p) invalid(s, where(p, t) + ": a second piece of the message in the phase");
      e.last_phase = p;
      e.ranges.emplace_back(t.offset, t.bytes);
    }
  }
  for (Rank i = 0; i < n; ++i) {
    for (const auto& e : m.row(i)) {
      auto it = pieces.find(std::uint64_t{i} * n + e.peer);
      if (it == pieces.end()) {
        invalid(s, "the " + std::to_string(e.bytes) + "-byte message " + std::to_string(i) + " -> " +
                       std::to_string(e.peer) + " is never sent");
      }
      auto& r = it->second.ranges;
      std::sort(r.begin(), r.end());
      std::uint64_t covered = 0;
      for (const auto& [offset, bytes] : r) {
        if (offset != covered) {
          invalid(s,
                  "message " + std::to_string(i) + " -> " + std::to_string(e.peer) + ": bytes " +
                      (offset < covered ? "from " + std::to_string(offset) + " are sent twice"
                                        : std::to_string(covered) + ".." + std::to_string(offset) + " are never sent"));
        }
        covered += bytes;
      }
      if (covered != e.bytes) {
        invalid(s, "message " + std::to_string(i) + " -> " + std::to_string(e.peer) + ": only " +
                       std::to_string(covered) + " of " + std::to_string(e.bytes) + " bytes are sent");
      }
    }
  }
}

}  // namespace switchyard::schedulers
