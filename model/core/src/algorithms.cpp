#include "switchyard/model/algorithms.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace switchyard::model {
namespace {

// One piece moving from src to dst in a superstep.
struct Move {
  ProcessId src = 0;
  ProcessId dst = 0;
  Piece piece{};
};

// A group of a superstep: its members (leader first) and logical shape.
struct Group {
  std::vector<ProcessId> members;
  Shape shape{};
};

std::uint32_t ceil_sqrt(std::uint64_t n) {
  auto r = static_cast<std::uint32_t>(std::sqrt(static_cast<double>(n)));
  while (std::uint64_t{r} * r < n) ++r;
  while (r > 0 && std::uint64_t{r - 1} * (r - 1) >= n) --r;
  return r;
}

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) { return static_cast<std::uint32_t>((a + b - 1) / b); }

// The near-square grid of n processes: ceil(n / c) x c, c = ceil(sqrt(n)).
Shape grid(std::uint64_t n) {
  const std::uint32_t c = std::max(ceil_sqrt(n), 1u);
  return Shape{ceil_div(n, c), c};
}

// r x c = p with r the largest divisor of p not above sqrt(p).
Shape factor(ProcessId p) {
  std::uint32_t r = std::max(ceil_sqrt(p), 1u);
  while (p % r != 0 || std::uint64_t{r} * r > p) --r;
  return Shape{r, p / r};
}

// How a superstep's messages of several pieces leave and arrive in memory
// (Transfer::packed): `pack` packs those whose pieces are not one after another
// already (one origin, consecutive targets modulo p); `forward` sends each as
// the whole buffer it arrived in; `pack_and_unpack` also scatters every
// message's pieces out of the receive buffer.
enum class Copies : std::uint8_t { pack, forward, pack_and_unpack };

bool consecutive(const std::vector<Piece>& pieces, std::uint64_t first, std::uint64_t count, ProcessId p) {
  const Piece& head = pieces[first];
  for (std::uint64_t k = 1; k < count; ++k) {
    const Piece& piece = pieces[first + k];
    if (piece.origin != head.origin || piece.target != (head.target + k) % p) return false;
  }
  return true;
}

// The superstep moving `moves` on `groups`: one transfer per (src, dst) pair,
// its pieces in the order of `moves`; groups without a transfer are left out.
// accessed_bytes is the most bytes a member packs into combined messages.
Superstep assemble(std::string label, std::uint64_t L, ProcessId p, std::vector<Move> moves,
                   const std::vector<Group>& groups, Copies copies = Copies::pack) {
  std::vector<std::int64_t> group_of(p, -1);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (ProcessId m : groups[g].members) group_of[m] = static_cast<std::int64_t>(g);
  std::stable_sort(moves.begin(), moves.end(), [&](const Move& a, const Move& b) {
    if (group_of[a.src] != group_of[b.src]) return group_of[a.src] < group_of[b.src];
    return a.src != b.src ? a.src < b.src : a.dst < b.dst;
  });
  Superstep step{std::move(label), {}};
  std::size_t k = 0;
  while (k < moves.size()) {
    const std::int64_t g = group_of[moves[k].src];
    if (g < 0 || group_of[moves[k].dst] != g)
      throw std::logic_error("switchyard::model: an algorithm moved a piece outside its group");
    Submachine sub{groups[g].members, groups[g].shape, {}, {}, 0};
    std::vector<std::uint64_t> packed(p, 0);
    for (; k < moves.size() && group_of[moves[k].src] == g;) {
      Transfer t{moves[k].src, moves[k].dst, 0, sub.pieces.size(), 0};
      for (; k < moves.size() && moves[k].src == t.src && moves[k].dst == t.dst; ++k) {
        sub.pieces.push_back(moves[k].piece);
        ++t.piece_count;
      }
      t.bytes = t.piece_count * L;
      if (t.piece_count > 1) packed[t.src] += t.bytes;
      t.packed =
          t.piece_count > 1 && copies != Copies::forward && !consecutive(sub.pieces, t.first_piece, t.piece_count, p);
      t.unpacked = t.piece_count > 1 && copies == Copies::pack_and_unpack;
      sub.transfers.push_back(t);
    }
    sub.accessed_bytes = *std::max_element(packed.begin(), packed.end());
    step.submachines.push_back(std::move(sub));
  }
  return step;
}

// Adds a superstep that moves anything.
void append(Algorithm& out, Superstep&& step) {
  if (!step.submachines.empty()) out.push_back(std::move(step));
}

// A range [lo, hi) of virtual processes (relative to the root) and its shape.
struct Range {
  ProcessId lo = 0, hi = 0;
  Shape shape{};
};

ProcessId real(ProcessId v, ProcessId root, ProcessId p) {
  return static_cast<ProcessId>((v + std::uint64_t{root}) % p);
}

std::vector<ProcessId> members_of(ProcessId lo, ProcessId hi, ProcessId step, ProcessId root, ProcessId p) {
  std::vector<ProcessId> out;
  for (ProcessId v = lo; v < hi; v += step) out.push_back(real(v, root, p));
  return out;
}

// One level of a k-level scatter: every range splits into groups of
// group_size(n) consecutive processes; the range's first process sends each
// other group's first process (its leader) the pieces of that group. The
// submachine is the range's leaders, with shape leaders_shape(range).
template <class GroupSize, class LeadersShape>
std::vector<Range> scatter_level(Algorithm& out, const char* label, std::uint64_t L, ProcessId p, ProcessId root,
                                 const std::vector<Range>& ranges, GroupSize group_size, LeadersShape leaders_shape) {
  std::vector<Move> moves;
  std::vector<Group> groups;
  std::vector<Range> next;
  for (const Range& r : ranges) {
    const ProcessId size = std::max<ProcessId>(group_size(r.hi - r.lo), 1);
    groups.push_back(Group{members_of(r.lo, r.hi, size, root, p), leaders_shape(r)});
    for (ProcessId lead = r.lo; lead < r.hi; lead += size) {
      const ProcessId end = std::min(r.hi, lead + size);
      next.push_back(Range{lead, end, grid(end - lead)});
      // The sender's own group stays with it: a local copy (src == dst).
      for (ProcessId v = lead; v < end; ++v)
        moves.push_back(Move{real(r.lo, root, p), real(lead, root, p), Piece{root, real(v, root, p)}});
    }
  }
  append(out, assemble(label, L, p, std::move(moves), groups));
  return next;
}

void check(ProcessId p, ProcessId root) {
  if (p == 0) throw std::invalid_argument("switchyard::model: an algorithm needs at least 1 process");
  if (root >= p)
    throw std::invalid_argument("switchyard::model: root " + std::to_string(root) + " >= p = " + std::to_string(p));
}

// The part of a range that keeps the sender: ceil(keep * n), within [1, n - 1].
ProcessId kept(ProcessId n, double keep) {
  const auto k = static_cast<ProcessId>(std::ceil(keep * n - 1e-9));
  return std::clamp<ProcessId>(k, 1, n - 1);
}

// The shape of the first `part` of n processes of shape s, cut across its longer side.
Shape cut(Shape s, ProcessId part, ProcessId n) {
  if (s.cols >= s.rows) return Shape{s.rows, std::max(1u, ceil_div(std::uint64_t{s.cols} * part, n))};
  return Shape{std::max(1u, ceil_div(std::uint64_t{s.rows} * part, n)), s.cols};
}

// Repeated splitting of ranges, every range in the same superstep: the
// range's first process sends to the first of its second part either the
// pieces of that part (a scatter: logp-lev-sq, logp-lev-rec) or every piece
// (a broadcast of the long message: 1-lev-our-br).
Algorithm halving(ProcessId p, std::uint64_t L, ProcessId root, double keep, bool broadcast) {
  check(p, root);
  Algorithm out;
  std::vector<Range> ranges{Range{0, p, grid(p)}};
  for (int step = 0; !ranges.empty(); ++step) {
    std::vector<Move> moves;
    std::vector<Group> groups;
    std::vector<Range> next;
    for (const Range& r : ranges) {
      const ProcessId n = r.hi - r.lo;
      if (n < 2) continue;
      const ProcessId m = kept(n, keep);
      groups.push_back(Group{members_of(r.lo, r.hi, 1, root, p), r.shape});
      const ProcessId from = real(r.lo, root, p), to = real(r.lo + m, root, p);
      const ProcessId first = broadcast ? 1 : r.lo + m, last = broadcast ? p : r.hi;
      for (ProcessId v = first; v < last; ++v) moves.push_back(Move{from, to, Piece{root, real(v, root, p)}});
      next.push_back(Range{r.lo, r.lo + m, cut(r.shape, m, n)});
      next.push_back(Range{r.lo + m, r.hi, cut(r.shape, n - m, n)});
    }
    append(out, assemble("split " + std::to_string(step), L, p, std::move(moves), groups));
    ranges = std::move(next);
  }
  return out;
}

// All-to-all by moving every piece (s, t) from holder to holder: next(h, piece)
// is where the piece is after the superstep; groups(step) the submachines.
// With `copies`, a piece that stays is a local copy (a message of its holder
// to itself, as the paper counts them); without, it does not move.
template <class Next>
void route(Algorithm& out, const char* label, std::uint64_t L, ProcessId p, std::vector<ProcessId>& holder,
           const std::vector<Group>& groups, bool copies, Next next, Copies memory = Copies::pack) {
  std::vector<Move> moves;
  for (ProcessId s = 0; s < p; ++s)
    for (ProcessId t = 0; t < p; ++t) {
      ProcessId& h = holder[std::uint64_t{s} * p + t];
      const ProcessId to = next(h, s, t);
      if (to != h || copies) moves.push_back(Move{h, to, Piece{s, t}});
      h = to;
    }
  append(out, assemble(label, L, p, std::move(moves), groups, memory));
}

std::vector<ProcessId> initial_holders(ProcessId p) {
  std::vector<ProcessId> h(std::uint64_t{p} * p);
  for (ProcessId s = 0; s < p; ++s) std::fill_n(h.begin() + std::uint64_t{s} * p, p, s);
  return h;
}

std::vector<Group> whole(ProcessId p) { return {Group{members_of(0, p, 1, 0, p), grid(p)}}; }

// Groups of `size` consecutive processes (rows of an r x size grid), or with
// stride: the columns.
std::vector<Group> rows(Shape g) {
  std::vector<Group> out;
  for (ProcessId r = 0; r < g.rows; ++r)
    out.push_back(Group{members_of(r * g.cols, (r + 1) * g.cols, 1, 0, g.rows * g.cols), Shape{1, g.cols}});
  return out;
}
std::vector<Group> columns(Shape g) {
  std::vector<Group> out;
  for (ProcessId c = 0; c < g.cols; ++c) {
    std::vector<ProcessId> m;
    for (ProcessId r = 0; r < g.rows; ++r) m.push_back(r * g.cols + c);
    out.push_back(Group{std::move(m), Shape{g.rows, 1}});
  }
  return out;
}

}  // namespace

std::string_view operation_name(Operation op) noexcept {
  switch (op) {
    case Operation::one_to_all:
      return "one-to-all";
    case Operation::all_to_one:
      return "all-to-one";
    case Operation::all_to_all:
      return "all-to-all";
  }
  return "?";
}

Operation parse_operation(std::string_view name) {
  for (Operation op : {Operation::one_to_all, Operation::all_to_one, Operation::all_to_all})
    if (operation_name(op) == name) return op;
  throw std::invalid_argument("switchyard::model: unknown operation '" + std::string(name) +
                              "' (known: one-to-all, all-to-one, all-to-all)");
}

const std::vector<std::string>& algorithm_names(Operation op) {
  static const std::vector<std::string> rooted{"1-lev-dir", "1-lev-our-br", "2-lev-rec",
                                               "3-lev-sq",  "logp-lev-sq",  "logp-lev-rec(0.75)"};
  // The reverse of a broadcast is a reduction, not a gather: all-to-one has
  // no 1-lev-our-br (nor had the paper's all-to-one family).
  static const std::vector<std::string> gather{"1-lev-dir", "2-lev-rec", "3-lev-sq", "logp-lev-sq",
                                               "logp-lev-rec(0.75)"};
  static const std::vector<std::string> total{"1-lev-dir", "1-lev-perm-linear", "1-lev-perm-xor",
                                              "2-lev-sq",  "2-lev-r,c",         "logp-lev-bfly"};
  if (op == Operation::all_to_all) return total;
  return op == Operation::all_to_one ? gather : rooted;
}

namespace one_to_all {

Algorithm direct(ProcessId p, std::uint64_t L, ProcessId root) {
  check(p, root);
  Algorithm out;
  scatter_level(
      out, "direct sends", L, p, root, {Range{0, p, grid(p)}}, [](ProcessId) { return 1u; },
      [](const Range& r) { return r.shape; });
  return out;
}

Algorithm binomial_broadcast(ProcessId p, std::uint64_t L, ProcessId root) { return halving(p, L, root, 0.5, true); }

Algorithm two_level_rows(ProcessId p, std::uint64_t L, ProcessId root) {
  check(p, root);
  Algorithm out;
  const auto size = [](ProcessId n) { return ceil_sqrt(n); };
  // The leaders form the first column of the grid, each group one row.
  auto groups = scatter_level(out, "to the row leaders", L, p, root, {Range{0, p, grid(p)}}, size, [&](const Range& r) {
    return Shape{ceil_div(r.hi - r.lo, size(r.hi - r.lo)), 1};
  });
  scatter_level(
      out, "along the rows", L, p, root, groups, [](ProcessId) { return 1u; },
      [](const Range& r) {
        return Shape{1, r.hi - r.lo};
      });
  return out;
}

Algorithm three_level_square(ProcessId p, std::uint64_t L, ProcessId root) {
  check(p, root);
  Algorithm out;
  const auto size = [](ProcessId n) { return ceil_sqrt(n); };
  // Blocks of ceil(sqrt(p)) processes (p^1/4 x p^1/4 on a square mesh); the
  // first step reaches their leaders across the whole machine, then 2-lev-rec
  // runs in every block.
  auto blocks = scatter_level(out, "to the block leaders", L, p, root, {Range{0, p, grid(p)}}, size,
                              [](const Range& r) { return r.shape; });
  auto rows = scatter_level(out, "to the row leaders of each block", L, p, root, blocks, size, [&](const Range& r) {
    return Shape{ceil_div(r.hi - r.lo, size(r.hi - r.lo)), 1};
  });
  scatter_level(
      out, "along the rows of each block", L, p, root, rows, [](ProcessId) { return 1u; },
      [](const Range& r) {
        return Shape{1, r.hi - r.lo};
      });
  return out;
}

Algorithm binomial_heap(ProcessId p, std::uint64_t L, ProcessId root) { return halving(p, L, root, 0.5, false); }

Algorithm uneven_heap(ProcessId p, std::uint64_t L, ProcessId root, double gamma) {
  if (!(gamma > 0 && gamma < 1))
    throw std::invalid_argument("switchyard::model: logp-lev-rec needs 0 < gamma < 1, not " + std::to_string(gamma));
  return halving(p, L, root, gamma, false);
}

}  // namespace one_to_all

namespace all_to_all {

Algorithm direct(ProcessId p, std::uint64_t L) {
  check(p, 0);
  Algorithm out;
  auto holder = initial_holders(p);
  route(out, "direct sends", L, p, holder, whole(p), true, [](ProcessId, ProcessId, ProcessId t) { return t; });
  return out;
}

// Partners i -> partner(i, k) for k = 0 .. count - 1 (k = 0: every process to
// itself, the local copies), one superstep each; partners >= p are dropped.
template <class Partner>
Algorithm permutations(ProcessId p, std::uint64_t L, ProcessId count, const char* label, Partner partner) {
  check(p, 0);
  Algorithm out;
  for (ProcessId k = 0; k < count; ++k) {
    std::vector<Move> moves;
    for (ProcessId i = 0; i < p; ++i)
      if (const ProcessId j = partner(i, k); j < p) moves.push_back(Move{i, j, Piece{i, j}});
    append(out, assemble(label + std::to_string(k), L, p, std::move(moves), whole(p)));
  }
  return out;
}

Algorithm linear_permutations(ProcessId p, std::uint64_t L) {
  return permutations(p, L, p, "i -> i + ", [p](ProcessId i, ProcessId k) { return (i + k) % p; });
}

Algorithm xor_permutations(ProcessId p, std::uint64_t L) {
  return permutations(p, L, std::bit_ceil(p), "i -> i xor ", [](ProcessId i, ProcessId k) { return i ^ k; });
}

Algorithm two_level_square(ProcessId p, std::uint64_t L) {
  check(p, 0);
  // r groups of c processes, r <= c; process (G, k) = G * c + k.
  const Shape g = factor(p);
  const ProcessId c = g.cols;
  auto holder = initial_holders(p);
  Algorithm out;
  std::vector<Group> blocks = rows(g);
  for (Group& b : blocks) b.shape = grid(c);
  // 1: inside each group, to member Gd the pieces for group Gd.
  route(out, "to the member of the target group's index", L, p, holder, blocks, true,
        [&](ProcessId h, ProcessId, ProcessId t) { return (h / c) * c + t / c; });
  // 2: (G, k) -> (k, G), one message of everything from group G to group k.
  route(
      out, "transpose the groups", L, p, holder, whole(p), false,
      [&](ProcessId h, ProcessId, ProcessId) { return (h % c) * c + h / c; }, Copies::forward);
  // 3: inside the target's group, to the target.
  route(out, "to the targets", L, p, holder, blocks, true, [](ProcessId, ProcessId, ProcessId t) { return t; });
  return out;
}

Algorithm rows_then_columns(ProcessId p, std::uint64_t L) {
  check(p, 0);
  const Shape g = factor(p);
  const ProcessId c = g.cols;
  auto holder = initial_holders(p);
  Algorithm out;
  route(out, "along the rows to the target column", L, p, holder, rows(g), true,
        [&](ProcessId h, ProcessId, ProcessId t) { return (h / c) * c + t % c; });
  route(out, "along the columns to the target", L, p, holder, columns(g), true,
        [](ProcessId, ProcessId, ProcessId t) { return t; });
  return out;
}

Algorithm butterfly(ProcessId p, std::uint64_t L) {
  check(p, 0);
  auto holder = initial_holders(p);
  Algorithm out;
  const bool power = std::has_single_bit(p);
  for (ProcessId bit = 1; bit < p; bit <<= 1)
    route(
        out, power ? "exchange across a dimension" : "rotate by a power of two", L, p, holder, whole(p), false,
        [&](ProcessId h, ProcessId s, ProcessId t) {
          if (power) return (h ^ t) & bit ? h ^ bit : h;
          const ProcessId offset = (t + p - s) % p;
          return offset & bit ? (h + bit) % p : h;
        },
        Copies::pack_and_unpack);
  return out;
}

}  // namespace all_to_all

Algorithm reversed(const Algorithm& forward) {
  Algorithm out(forward.rbegin(), forward.rend());
  for (Superstep& step : out)
    for (Submachine& sub : step.submachines) {
      for (Transfer& t : sub.transfers) {
        std::swap(t.src, t.dst);
        std::swap(t.packed, t.unpacked);
      }
      for (Piece& piece : sub.pieces) std::swap(piece.origin, piece.target);
    }
  return out;
}

namespace {

// The one-to-all algorithm of that name, if it is one.
std::optional<Algorithm> rooted(std::string_view name, ProcessId p, std::uint64_t L, ProcessId root) {
  const std::string_view gamma_prefix = "logp-lev-rec(";
  if (name == "1-lev-dir") return one_to_all::direct(p, L, root);
  if (name == "1-lev-our-br") return one_to_all::binomial_broadcast(p, L, root);
  if (name == "2-lev-rec") return one_to_all::two_level_rows(p, L, root);
  if (name == "3-lev-sq") return one_to_all::three_level_square(p, L, root);
  if (name == "logp-lev-sq") return one_to_all::binomial_heap(p, L, root);
  if (!name.starts_with(gamma_prefix) || !name.ends_with(")")) return std::nullopt;
  const std::string text(name.substr(gamma_prefix.size(), name.size() - gamma_prefix.size() - 1));
  char* end = nullptr;
  const double gamma = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    throw std::invalid_argument("switchyard::model: '" + std::string(name) + "': gamma '" + text + "' is not a number");
  return one_to_all::uneven_heap(p, L, root, gamma);
}

std::optional<Algorithm> total_exchange(std::string_view name, ProcessId p, std::uint64_t L) {
  if (name == "1-lev-dir") return all_to_all::direct(p, L);
  if (name == "1-lev-perm-linear") return all_to_all::linear_permutations(p, L);
  if (name == "1-lev-perm-xor") return all_to_all::xor_permutations(p, L);
  if (name == "2-lev-sq") return all_to_all::two_level_square(p, L);
  if (name == "2-lev-r,c") return all_to_all::rows_then_columns(p, L);
  if (name == "logp-lev-bfly") return all_to_all::butterfly(p, L);
  return std::nullopt;
}

}  // namespace

Algorithm supersteps(Operation op, std::string_view name, ProcessId p, std::uint64_t L, ProcessId root) {
  check(p, root);
  std::optional<Algorithm> a;
  if (op == Operation::all_to_all)
    a = total_exchange(name, p, L);
  else if (op == Operation::one_to_all || name != "1-lev-our-br")
    a = rooted(name, p, L, root);
  if (a) return op == Operation::all_to_one ? reversed(*a) : std::move(*a);
  std::string known;
  for (const auto& n : algorithm_names(op)) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("switchyard::model: unknown " + std::string(operation_name(op)) + " algorithm '" +
                              std::string(name) + "' (known: " + known + ", logp-lev-rec(GAMMA))");
}

}  // namespace switchyard::model
