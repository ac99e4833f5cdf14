#include "switchyard/schedulers/redistribution/redistribution_tables.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>

#include "switchyard/errors.hpp"
#include "switchyard/machine_memory.hpp"

namespace switchyard::schedulers::redistribution {

using schedulers::CommMatrix;
using schedulers::Schedule;
using schedulers::Transfer;

// ---------------------------------------------------------------------------
// COM
// ---------------------------------------------------------------------------

CommTable::CommTable(Rank sources, Rank targets)
    : sources_(sources), targets_(targets), cells_(std::size_t{sources} * targets, 0) {}

std::uint32_t CommTable::sends(Rank i) const {
  std::uint32_t n = 0;
  for (Rank j = 0; j < targets_; ++j) n += communicates(i, j);
  return n;
}

std::uint32_t CommTable::receives(Rank j) const {
  std::uint32_t n = 0;
  for (Rank i = 0; i < sources_; ++i) n += communicates(i, j);
  return n;
}

std::uint32_t CommTable::max_sends() const {
  std::uint32_t k = 0;
  for (Rank i = 0; i < sources_; ++i) k = std::max(k, sends(i));
  return k;
}

std::uint32_t CommTable::max_receives() const {
  std::uint32_t k = 0;
  for (Rank j = 0; j < targets_; ++j) k = std::max(k, receives(j));
  return k;
}

std::uint64_t CommTable::messages() const {
  return static_cast<std::uint64_t>(std::count_if(cells_.begin(), cells_.end(), [](Index e) { return e != 0; }));
}

namespace {

void check_same_shape(const Layout& src, const Layout& dst) {
  if (src.extent() != dst.extent()) {
    throw InvalidArgument("switchyard: redistribution from " + src.str() + " to " + dst.str() +
                          ": the two layouts are of arrays of different shapes");
  }
}

}  // namespace

CommTable dimension_table(const Layout& src, const Layout& dst, std::size_t d) {
  check_same_shape(src, dst);
  const auto p = static_cast<Rank>(src.grid(d)), q = static_cast<Rank>(dst.grid(d));
  CommTable com(p, q);
  for (Rank i = 0; i < p; ++i) {
    const LddSet mine = src.ldd(d, i);
    for (Rank j = 0; j < q; ++j) com.set(i, j, size(intersect(mine, dst.ldd(d, j))));
  }
  return com;
}

CommTable communication_table(const Layout& src, const Layout& dst) {
  check_same_shape(src, dst);
  const double pairs = static_cast<double>(src.processes()) * static_cast<double>(dst.processes());
  if (const std::string why = memory_shortfall(pairs * sizeof(Index)); !why.empty()) {
    throw InvalidArgument("switchyard: redistribution: COM of " + std::to_string(src.processes()) + " sources x " +
                          std::to_string(dst.processes()) + " targets " + why);
  }
  std::vector<CommTable> dims;
  for (std::size_t d = 0; d < src.rank(); ++d) dims.push_back(dimension_table(src, dst, d));
  CommTable com(src.processes(), dst.processes());
  std::vector<std::vector<Index>> target_coords(dst.processes());
  for (Rank j = 0; j < dst.processes(); ++j) target_coords[j] = dst.coordinates(j);
  for (Rank i = 0; i < src.processes(); ++i) {
    const auto ci = src.coordinates(i);
    for (Rank j = 0; j < dst.processes(); ++j) {
      Index elements = 1;
      for (std::size_t d = 0; d < dims.size() && elements; ++d) {
        elements *= dims[d].elements(static_cast<Rank>(ci[d]), static_cast<Rank>(target_coords[j][d]));
      }
      com.set(i, j, elements);
    }
  }
  return com;
}

// ---------------------------------------------------------------------------
// Scheduling tables
// ---------------------------------------------------------------------------

void check_tables_fit(const CommTable& com, std::size_t plans) {
  const double steps = std::max(com.max_sends(), com.max_receives());
  const double bytes = static_cast<double>(plans) * static_cast<double>(com.sources()) * steps * sizeof(std::int32_t);
  if (const std::string why = memory_shortfall(bytes); !why.empty()) {
    throw InvalidArgument("switchyard: redistribution: " + std::to_string(com.sources()) + " sources, and a source " +
                          "sends to or a target receives from up to " + number_text(steps) +
                          " others: holding the sending " + "table" +
                          (plans > 1 ? "s of " + std::to_string(plans) + " schedules" : std::string(" of a schedule")) +
                          " (sources x at least that many steps) " + why);
  }
}

SchedulingTable::SchedulingTable(Rank rows, std::uint32_t steps)
    : rows_(rows), steps_(steps), cells_(std::size_t{rows} * steps, kIdle) {}

std::vector<std::int32_t> SchedulingTable::row(Rank r) const {
  std::vector<std::int32_t> out(steps_);
  for (std::uint32_t k = 0; k < steps_; ++k) out[k] = at(r, k);
  return out;
}

std::vector<std::int32_t> SchedulingTable::column(std::uint32_t step) const {
  std::vector<std::int32_t> out(rows_);
  for (Rank r = 0; r < rows_; ++r) out[r] = at(r, step);
  return out;
}

bool SchedulingTable::contention_free() const {
  for (std::uint32_t k = 0; k < steps_; ++k) {
    std::vector<std::int32_t> col = column(k);
    std::erase(col, kIdle);
    std::sort(col.begin(), col.end());
    if (std::adjacent_find(col.begin(), col.end()) != col.end()) return false;
  }
  return true;
}

void validate_table(const SchedulingTable& cs, const CommTable& com) {
  const std::string what = "switchyard: scheduling table: ";
  if (cs.rows() != com.sources()) {
    throw InvalidArgument(what + std::to_string(cs.rows()) + " rows for " + std::to_string(com.sources()) + " sources");
  }
  for (Rank i = 0; i < cs.rows(); ++i) {
    std::vector<bool> seen(com.targets(), false);
    for (std::uint32_t k = 0; k < cs.steps(); ++k) {
      const std::int32_t j = cs.at(i, k);
      if (j == SchedulingTable::kIdle) continue;
      const std::string cell = "CS[" + std::to_string(i) + ", " + std::to_string(k) + "] = " + std::to_string(j);
      if (j < 0 || static_cast<Rank>(j) >= com.targets()) throw InvalidArgument(what + cell + " is not a target");
      if (!com.communicates(i, static_cast<Rank>(j)))
        throw InvalidArgument(what + cell + " but COM has no such message");
      if (seen[static_cast<Rank>(j)]) throw InvalidArgument(what + cell + " a second time in the row");
      seen[static_cast<Rank>(j)] = true;
    }
    for (Rank j = 0; j < com.targets(); ++j) {
      if (com.communicates(i, j) && !seen[j]) {
        throw InvalidArgument(what + "source " + std::to_string(i) + " never sends to target " + std::to_string(j));
      }
    }
  }
}

SchedulingTable receiving_table(const SchedulingTable& cs, Rank targets) {
  SchedulingTable out(targets, cs.steps());
  for (Rank i = 0; i < cs.rows(); ++i) {
    for (std::uint32_t k = 0; k < cs.steps(); ++k) {
      const std::int32_t j = cs.at(i, k);
      if (j == SchedulingTable::kIdle) continue;
      if (j < 0 || static_cast<Rank>(j) >= targets) {
        throw InvalidArgument("switchyard: receiving_table: CS[" + std::to_string(i) + ", " + std::to_string(k) +
                              "] = " + std::to_string(j) + " is not one of the " + std::to_string(targets) +
                              " targets");
      }
      if (out.at(static_cast<Rank>(j), k) != SchedulingTable::kIdle) {
        throw InvalidArgument("switchyard: receiving_table: target " + std::to_string(j) + " receives from sources " +
                              std::to_string(out.at(static_cast<Rank>(j), k)) + " and " + std::to_string(i) +
                              " in step " + std::to_string(k) + ": the table has contention");
      }
      out.set(static_cast<Rank>(j), k, static_cast<std::int32_t>(i));
    }
  }
  return out;
}

namespace {

// Steps in which nobody sends carry nothing: they are left out.
SchedulingTable without_idle_steps(const SchedulingTable& cs) {
  std::vector<std::uint32_t> keep;
  for (std::uint32_t k = 0; k < cs.steps(); ++k) {
    const auto col = cs.column(k);
    if (std::any_of(col.begin(), col.end(), [](std::int32_t v) { return v != SchedulingTable::kIdle; })) {
      keep.push_back(k);
    }
  }
  SchedulingTable out(cs.rows(), static_cast<std::uint32_t>(keep.size()));
  for (Rank r = 0; r < cs.rows(); ++r) {
    for (std::uint32_t k = 0; k < keep.size(); ++k) out.set(r, k, cs.at(r, keep[k]));
  }
  return out;
}

}  // namespace

SchedulingTable naive_table(const CommTable& com) {
  SchedulingTable cs(com.sources(), com.targets());
  for (Rank i = 0; i < com.sources(); ++i) {
    for (Rank k = 0; k < com.targets(); ++k) {
      if (com.communicates(i, k)) cs.set(i, k, static_cast<std::int32_t>(k));
    }
  }
  return without_idle_steps(cs);
}

SchedulingTable offset_table(const CommTable& com) {
  SchedulingTable cs(com.sources(), com.targets());
  for (Rank i = 0; i < com.sources(); ++i) {
    for (Rank k = 0; k < com.targets(); ++k) {
      const Rank j = static_cast<Rank>((std::uint64_t{i} + k) % com.targets());
      if (com.communicates(i, j)) cs.set(i, k, static_cast<std::int32_t>(j));
    }
  }
  return without_idle_steps(cs);
}

// ---------------------------------------------------------------------------
// Algorithm 1 (§4.1)
// ---------------------------------------------------------------------------

namespace {

// The targets of row i in ≺ order, the round of P' that starts at `from`.
std::vector<std::int32_t> ones_from(const CommTable& com, Rank i, Rank from) {
  std::vector<std::int32_t> out;
  for (Rank j = from; j < com.targets(); ++j) {
    if (com.communicates(i, j)) out.push_back(static_cast<std::int32_t>(j));
  }
  for (Rank j = 0; j < from; ++j) {
    if (com.communicates(i, j)) out.push_back(static_cast<std::int32_t>(j));
  }
  return out;
}

}  // namespace

Algorithm1Result algorithm1(const CommTable& com, std::uint32_t beta) {
  const Rank p = com.sources(), q = com.targets();
  const std::string what = "switchyard: Algorithm 1 (beta = " + std::to_string(beta) + "): ";
  if (p == 0 || q == 0 || com.sends(0) == 0) throw InvalidArgument(what + "row 0 of COM has no '1'");
  Algorithm1Result r;

  // Step 1: J*_0, and by Theorem 2 the '1' of row i symmetrical to it.
  Rank first = 0;
  for (Rank j = 0; j < q; ++j) {
    if (com.communicates(0, j) && !com.communicates(0, (j + q - 1) % q)) {
      first = j;
      break;
    }
  }
  r.relative_group.resize(p);
  for (Rank i = 0; i < p; ++i) {
    r.relative_group[i] = static_cast<std::int32_t>((std::uint64_t{first} + std::uint64_t{i} * beta) % q);
  }

  // Step 2: sources with equal J* form a sub-group.
  std::map<std::int32_t, std::size_t> group_of;
  for (Rank i = 0; i < p; ++i) {
    const auto [it, fresh] = group_of.emplace(r.relative_group[i], r.sub_groups.size());
    if (fresh) r.sub_groups.emplace_back();
    r.sub_groups[it->second].push_back(i);
  }

  // Steps 3 and 4: the u-th member of a sub-group starts at the u-th '1'
  // following J* (the first being J* itself); a sub-group of one starts at J*.
  r.start.resize(p);
  for (const auto& group : r.sub_groups) {
    for (std::size_t u = 0; u < group.size(); ++u) {
      const Rank i = group[u];
      const auto j_star = static_cast<Rank>(r.relative_group[i]);
      if (!com.communicates(i, j_star)) {
        throw InvalidArgument(what + "row " + std::to_string(i) + " has no '1' at its relative-group entry " +
                              std::to_string(j_star) + ": the table lacks Theorem 2's symmetry");
      }
      const auto ones = ones_from(com, i, j_star);
      if (u >= ones.size()) {
        throw InvalidArgument(what + "the sub-group of J* = " + std::to_string(j_star) + " has " +
                              std::to_string(group.size()) + " members but row " + std::to_string(i) + " only " +
                              std::to_string(ones.size()) + " '1' entries");
      }
      r.start[i] = ones[u];
    }
  }

  // Step 5: each sending vector runs through its row's ones from its start element.
  r.cs = SchedulingTable(p, com.max_sends());
  for (Rank i = 0; i < p; ++i) {
    const auto sv = ones_from(com, i, static_cast<Rank>(r.start[i]));
    for (std::uint32_t k = 0; k < sv.size(); ++k) r.cs.set(i, k, sv[k]);
  }
  return r;
}

// ---------------------------------------------------------------------------
// Algorithms 1 and 2 on layouts
// ---------------------------------------------------------------------------

namespace {

// The COM of one dimension for an array without end, where Theorem 2 holds
// exactly. With b = β b', source i's blocks u P + i each hold β target blocks,
// (u P + i) β + k for k < β, owned by ((u P + i) β + k) mod P'; over all u
// these are i β + k plus the multiples of g = gcd(P β, P'). So
//   COM[i, j] = 1  ⇔  (j - i β) mod g < β,
// and with b' = β b, by symmetry, COM[i, j] = 1 ⇔ (i - j β) mod gcd(P' β, P) < β.
CommTable periodic_pattern(Rank p, Rank q, std::uint64_t beta, bool transposed) {
  CommTable com(p, q);
  const std::uint64_t g = transposed ? std::gcd(q * beta, std::uint64_t{p}) : std::gcd(p * beta, std::uint64_t{q});
  // Residues mod g of the two terms, one division per row and column rather than per entry.
  std::vector<std::uint64_t> row(p), col(q);
  for (Rank i = 0; i < p; ++i) row[i] = transposed ? i % g : (i % g) * (beta % g) % g;
  for (Rank j = 0; j < q; ++j) col[j] = transposed ? (j % g) * (beta % g) % g : j % g;
  for (Rank i = 0; i < p; ++i) {
    for (Rank j = 0; j < q; ++j) {
      // (j - i β) mod g, or (i - j β) mod g for the transpose.
      const std::uint64_t a = transposed ? row[i] : col[j], c = transposed ? col[j] : row[i];
      com.set(i, j, (a >= c ? a - c : a + g - c) < beta ? 1 : 0);
    }
  }
  return com;
}

CommTable transpose(const CommTable& com) {
  CommTable t(com.targets(), com.sources());
  for (Rank i = 0; i < com.sources(); ++i) {
    for (Rank j = 0; j < com.targets(); ++j) t.set(j, i, com.elements(i, j));
  }
  return t;
}

// What one dimension offers Algorithm 2.
struct DimensionTables {
  bool known = false;  // b and b' are multiples: the periodic pattern is known
  CommTable pattern;  // that pattern
  std::optional<SchedulingTable> free;  // its contention-free table: Algorithm 1, transposed when K' > K
  std::uint32_t k = 0, k2 = 0;  // K and K' of the pattern
  SchedulingTable senders;  // each row's targets in order, K columns: case 2.2's input
  std::string method, reason;
};

DimensionTables dimension_tables(const Layout& src, const Layout& dst, std::size_t d) {
  DimensionTables t;
  const auto p = static_cast<Rank>(src.grid(d)), q = static_cast<Rank>(dst.grid(d));
  const Index b = src.block(d), b2 = dst.block(d);
  const std::string dim = src.rank() > 1 ? "dimension " + std::to_string(d + 1) + ": " : "";
  // With one source or one target, Theorem 2 holds for any β (there is one
  // row, or j' = 0 mod 1) and every source sends to every target that owns data.
  const bool one_side = p == 1 || q == 1;
  const bool direct_ok = one_side || b % b2 == 0, transposed_ok = one_side || b2 % b == 0;
  if (!direct_ok && !transposed_ok) {
    t.reason = dim + "b = " + std::to_string(b) + " and b' = " + std::to_string(b2) +
               " are not multiples of each other (Algorithm 1 needs b = β b' or b' = β b)";
    return t;
  }
  const std::uint64_t beta = one_side ? 1 : static_cast<std::uint64_t>(direct_ok ? b / b2 : b2 / b);
  t.known = true;
  t.pattern = periodic_pattern(p, q, beta, !direct_ok);
  const std::uint32_t k = t.k = t.pattern.max_sends(), k2 = t.k2 = t.pattern.max_receives();
  const std::string ks = " (K = " + std::to_string(k) + ", K' = " + std::to_string(k2) + ")";
  const std::string single = p == 1 ? "one source" : "one target";
  if (direct_ok && k2 <= k) {
    t.free = algorithm1(t.pattern, static_cast<std::uint32_t>(beta)).cs;
    t.method = dim + "Algorithm 1, " + (one_side ? single : "b = " + std::to_string(beta) + " b'") + ks;
  } else if (transposed_ok && k <= k2) {
    // §4.4: the sending table for b' = β b is the receiving table for b = β b'.
    t.free = receiving_table(algorithm1(transpose(t.pattern), static_cast<std::uint32_t>(beta)).cs, p);
    t.method = dim + "Algorithm 1 on the transpose (§4.4), " +
               (one_side ? single : "b' = " + std::to_string(beta) + " b") + ks;
  } else {
    // Algorithm 1 schedules in K steps (K' on the transpose): one side has more messages than that.
    t.reason = dim + (direct_ok ? "b = " + std::to_string(beta) + " b' but K' = " + std::to_string(k2) + " > K = " +
                                      std::to_string(k) + ": a target has more senders than Algorithm 1 has steps"
                                : "b' = " + std::to_string(beta) + " b but K = " + std::to_string(k) + " > K' = " +
                                      std::to_string(k2) + ": a source has more targets than Algorithm 1 has steps");
  }
  if (t.free && !t.free->contention_free()) {
    throw Error("switchyard: " + t.method + " produced a table with contention (Theorem 3 violated)");
  }
  t.senders = SchedulingTable(p, k);
  for (Rank i = 0; i < p; ++i) {
    const auto ones = ones_from(t.pattern, i, 0);
    for (std::uint32_t s = 0; s < ones.size(); ++s) t.senders.set(i, s, ones[s]);
  }
  return t;
}

// Case 2.1 of Algorithm 2: both tables contention-free, so their product is.
// Source (i, i_d) is row i P_d + i_d; in step k K_d + k_d it sends to target
// (T[i, k], S[i_d, k_d]), which is T[i, k] P'_d + S[i_d, k_d] (row-major grids).
SchedulingTable product(const SchedulingTable& t, const SchedulingTable& s, Rank targets_d) {
  SchedulingTable out(t.rows() * s.rows(), t.steps() * s.steps());
  for (Rank i = 0; i < t.rows(); ++i) {
    for (Rank id = 0; id < s.rows(); ++id) {
      for (std::uint32_t k = 0; k < t.steps(); ++k) {
        for (std::uint32_t kd = 0; kd < s.steps(); ++kd) {
          const std::int32_t a = t.at(i, k), c = s.at(id, kd);
          if (a == SchedulingTable::kIdle || c == SchedulingTable::kIdle) continue;
          out.set(i * s.rows() + id, k * s.steps() + kd, a * static_cast<std::int32_t>(targets_d) + c);
        }
      }
    }
  }
  return out;
}

// Case 2.2 of Algorithm 2 (P_d > P'_d): dimension d alone has too few targets
// for contention-free start elements, so the tables of several of the earlier
// dimensions' steps are compounded. S's sources that send to the same target
// in one of its columns form a sub-group of r members at most; the earlier
// steps are taken r at a time, and in each such group the u-th member of a
// sub-group starts at the group's u-th step (Algorithm 1's step 4 on the
// compound table) and goes round. The caller checks the result: it is
// contention-free when no earlier target occurs twice within one group.
SchedulingTable compound(const SchedulingTable& t, const SchedulingTable& s, Rank targets_d) {
  // Member index of every (source, step) of S within its sub-group.
  std::vector<std::uint32_t> member(std::size_t{s.rows()} * s.steps(), 0);
  std::uint32_t r = 1;
  for (std::uint32_t kd = 0; kd < s.steps(); ++kd) {
    std::map<std::int32_t, std::uint32_t> seen;
    for (Rank id = 0; id < s.rows(); ++id) {
      const std::int32_t j = s.at(id, kd);
      if (j == SchedulingTable::kIdle) continue;
      const std::uint32_t u = seen[j]++;
      member[std::size_t{id} * s.steps() + kd] = u;
      r = std::max(r, u + 1);
    }
  }
  SchedulingTable out(t.rows() * s.rows(), t.steps() * s.steps());
  std::uint32_t step = 0;
  for (std::uint32_t first = 0; first < t.steps(); first += r) {
    const std::uint32_t size = std::min(r, t.steps() - first);
    for (std::uint32_t kd = 0; kd < s.steps(); ++kd) {
      for (std::uint32_t a = 0; a < size; ++a, ++step) {
        for (Rank i = 0; i < t.rows(); ++i) {
          for (Rank id = 0; id < s.rows(); ++id) {
            const std::int32_t c = s.at(id, kd);
            const std::int32_t e = t.at(i, first + (a + member[std::size_t{id} * s.steps() + kd]) % size);
            if (c == SchedulingTable::kIdle || e == SchedulingTable::kIdle) continue;
            out.set(i * s.rows() + id, step, e * static_cast<std::int32_t>(targets_d) + c);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

namespace {

// An upper bound on the bytes of the tables built below: per dimension the
// periodic pattern and its transpose (p x q entries of 8 bytes) and its own
// table (p rows of at most max(p, q) steps), and their product over the
// dimensions (every dimension's rows by every one's steps), 4-byte entries.
double table_bytes(const Layout& src, const Layout& dst) {
  double rows = 1, steps = 1, per_dimension = 0;
  for (std::size_t d = 0; d < src.rank(); ++d) {
    const auto p = static_cast<double>(src.grid(d)), q = static_cast<double>(dst.grid(d));
    rows *= p;
    steps *= std::max(p, q);
    per_dimension += 2 * p * q * sizeof(Index) + p * std::max(p, q) * sizeof(std::int32_t);
  }
  return rows * steps * sizeof(std::int32_t) + per_dimension;
}

}  // namespace

TableAttempt contention_free_table(const Layout& src, const Layout& dst, const CommTable& com) {
  check_same_shape(src, dst);
  TableAttempt attempt;
  // Refused before any of it is built: cyclic@80000 -> block@4 alone would take 25 GB.
  if (const std::string why = memory_shortfall(table_bytes(src, dst)); !why.empty()) {
    attempt.reason = "building its tables " + why;
    return attempt;
  }
  // Algorithm 2 builds dimension by dimension on the table T of the dimensions
  // before; for the first one T is a single source with a single step.
  SchedulingTable t(1, 1);
  t.set(0, 0, 0);
  std::vector<std::string> methods;
  for (std::size_t d = 0; d < src.rank(); ++d) {
    DimensionTables dim = dimension_tables(src, dst, d);
    if (!dim.known) {
      attempt.reason = dim.reason;
      return attempt;
    }
    const auto targets_d = static_cast<Rank>(dst.grid(d));
    // Case 2.1: the dimension's own table has as many steps as its sources
    // have targets, so the product wastes no step.
    if (dim.free && dim.k2 <= dim.k) {
      t = product(t, *dim.free, targets_d);
      methods.push_back(dim.method);
      continue;
    }
    // Case 2.2 (K'_d > K_d): compounding with the earlier dimensions keeps K_d
    // steps per earlier step where the dimension's own table would need K'_d.
    std::optional<SchedulingTable> c;
    if (d > 0) c = compound(t, dim.senders, targets_d);
    if (c && c->contention_free()) {
      t = std::move(*c);
      methods.push_back("dimension " + std::to_string(d + 1) + ": compounded with dimension" +
                        (d > 1 ? "s 1-" + std::to_string(d) : std::string(" 1")) + " (case 2.2)");
    } else if (dim.free) {
      t = product(t, *dim.free, targets_d);
      methods.push_back(dim.method);
    } else {
      attempt.reason = dim.reason;
      return attempt;
    }
  }
  // The periodic tables hold every message of the finite array and maybe more:
  // the entries COM lacks are idle.
  for (Rank i = 0; i < t.rows(); ++i) {
    for (std::uint32_t k = 0; k < t.steps(); ++k) {
      const std::int32_t j = t.at(i, k);
      if (j != SchedulingTable::kIdle && !com.communicates(i, static_cast<Rank>(j))) {
        t.set(i, k, SchedulingTable::kIdle);
      }
    }
  }
  ContentionFreeTable table{without_idle_steps(t), ""};
  validate_table(table.cs, com);
  if (!table.cs.contention_free()) throw Error("switchyard: Algorithm 2 produced a table with contention");
  for (const auto& m : methods) table.method += (table.method.empty() ? "" : "; ") + m;
  if (src.rank() > 1) table.method = "Algorithm 2: " + table.method;
  attempt.table = std::move(table);
  return attempt;
}

// ---------------------------------------------------------------------------
// Tables and schedules
// ---------------------------------------------------------------------------

Rank job_processes(const CommTable& com) { return std::max(com.sources(), com.targets()); }

CommMatrix comm_matrix(const CommTable& com) {
  CommMatrix m(job_processes(com));
  for (Rank i = 0; i < com.sources(); ++i) {
    for (Rank j = 0; j < com.targets(); ++j) {
      if (com.communicates(i, j)) m.set(i, j, static_cast<std::uint64_t>(com.elements(i, j)) * sizeof(double));
    }
  }
  return m;
}

Schedule schedule_of(const SchedulingTable& cs, const CommTable& com, std::string name) {
  Schedule s;
  s.processes = job_processes(com);
  s.scheduler = std::move(name);
  s.phases.resize(cs.steps());
  for (std::uint32_t k = 0; k < cs.steps(); ++k) {
    for (Rank i = 0; i < cs.rows(); ++i) {
      const std::int32_t j = cs.at(i, k);
      if (j == SchedulingTable::kIdle) continue;
      const auto bytes = static_cast<std::uint64_t>(com.elements(i, static_cast<Rank>(j))) * sizeof(double);
      s.phases[k].push_back(Transfer{i, static_cast<Rank>(j), 0, bytes});
    }
  }
  return s;
}

SchedulingTable table_of(const Schedule& s, Rank sources) {
  SchedulingTable cs(sources, static_cast<std::uint32_t>(s.phases.size()));
  for (std::uint32_t k = 0; k < s.phases.size(); ++k) {
    for (const Transfer& t : s.phases[k]) {
      if (t.src >= sources || cs.at(t.src, k) != SchedulingTable::kIdle) {
        throw InvalidArgument("switchyard: table_of: schedule '" + s.scheduler + "' phase " + std::to_string(k) +
                              ": source " + std::to_string(t.src) + " is not a source or sends twice");
      }
      cs.set(t.src, k, static_cast<std::int32_t>(t.dst));
    }
  }
  return cs;
}

std::vector<std::vector<std::vector<Rank>>> receiving_lists(const Schedule& s, Rank targets) {
  std::vector<std::vector<std::vector<Rank>>> out(targets, std::vector<std::vector<Rank>>(s.phases.size()));
  for (std::size_t k = 0; k < s.phases.size(); ++k) {
    for (const Transfer& t : s.phases[k]) {
      if (t.dst < targets) out[t.dst][k].push_back(t.src);
    }
  }
  return out;
}

}  // namespace switchyard::schedulers::redistribution
