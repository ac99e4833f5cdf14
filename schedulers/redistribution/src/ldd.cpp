#include "switchyard/schedulers/redistribution/ldd.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers::redistribution {

namespace {

Index floor_div(Index a, Index b) {  // b > 0
  const Index q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
Index ceil_div(Index a, Index b) { return -floor_div(-a, b); }

std::string str(const Ldd& d) {
  return "(" + std::to_string(d.o) + ", " + std::to_string(d.b) + ", " + std::to_string(d.s) + ", " +
         std::to_string(d.n) + ")";
}

void check(const Ldd& d) {
  if (d.b < 0 || d.n < 0 || (d.n > 1 && d.s < d.b)) {
    throw InvalidArgument("switchyard: LDD " + str(d) +
                          ": blocks must have a non-negative length and a stride of at least that length");
  }
}

// lcm(x, y), or 0 if it does not fit an Index: the pattern then never repeats
// within an array of at most kMaxElements elements.
Index lcm_or_zero(Index x, Index y) {
  const Index q = x / std::gcd(x, y);
  return q > std::numeric_limits<Index>::max() / y ? 0 : q * y;
}

// Appends the pieces of one block of the outer LDD. Consecutive single pieces
// of equal length and spacing (the inner LDD's blocks that lie wholly inside
// the outer block) become one LDD with the inner stride, so that BLOCK against
// CYCLIC(1) is one piece, not one per element.
class PieceSink {
 public:
  explicit PieceSink(LddSet& out) : out_(out) {}
  void add(Index start, Index length, Index stride, Index count) {
    if (count > 1) {
      flush();
      out_.push_back({start, length, stride, count});
      return;
    }
    if (open_ && pending_.b == length &&
        (pending_.n == 1 ? start >= pending_.o + length : start == pending_.o + pending_.n * pending_.s)) {
      if (pending_.n == 1) pending_.s = start - pending_.o;
      ++pending_.n;
      return;
    }
    flush();
    pending_ = {start, length, length, 1};
    open_ = true;
  }
  void flush() {
    if (open_) out_.push_back(pending_);
    open_ = false;
  }

 private:
  LddSet& out_;
  Ldd pending_;
  bool open_ = false;
};

}  // namespace

bool Ldd::contains(Index i) const noexcept {
  if (empty() || i < o) return false;
  if (n == 1) return i < o + b;
  const Index u = (i - o) / s;
  return u < n && i - o - u * s < b;
}

Index size(const LddSet& set) noexcept {
  Index total = 0;
  for (const Ldd& d : set) total += d.size();
  return total;
}

std::vector<Index> index_set(const Ldd& d) {
  std::vector<Index> out;
  if (d.empty()) return out;
  out.reserve(static_cast<std::size_t>(d.size()));
  for (Index u = 0; u < d.n; ++u) {
    for (Index k = 0; k < d.b; ++k) out.push_back(d.o + u * d.s + k);
  }
  return out;
}

std::vector<Index> index_set(const LddSet& set) {
  std::vector<Index> out;
  for (const Ldd& d : set) {
    const auto part = index_set(d);
    out.insert(out.end(), part.begin(), part.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Closed form. Let x be the LDD with the longer blocks and y the other. Block
// u1 of x, [x.o + u1 x.s, +x.b), meets the blocks u2 of y in an interval of u2
// given by two divisions; each meeting is one piece [max of starts, min of ends).
// Block u1 + t (L / x.s) of x meets block u2 + t (L / y.s) of y in the same
// piece moved by t L, L = lcm(x.s, y.s), so only the blocks u1 of one period
// are visited and each of their pieces stands for an LDD of stride L, whose
// count is the number of t for which both blocks exist. The work is
// O(L / x.s + pieces), never O(elements).
LddSet intersect(const Ldd& a, const Ldd& c) {
  check(a);
  check(c);
  LddSet out;
  if (a.empty() || c.empty()) return out;
  const bool swap = c.b > a.b;
  const Ldd& x = swap ? c : a;
  const Ldd& y = swap ? a : c;

  // Blocks of x that reach into y's span at all.
  const Index y_end = y.o + (y.n - 1) * y.s + y.b;
  const Index u1_lo = std::max<Index>(0, ceil_div(y.o - x.o - x.b + 1, x.s > 0 ? x.s : 1));
  const Index u1_hi = x.n == 1 ? std::min<Index>(0, u1_lo) : std::min(x.n - 1, floor_div(y_end - 1 - x.o, x.s));
  if (u1_lo > u1_hi) return out;

  // Periodic only if both LDDs repeat and the period fits an Index.
  const Index period = (x.n > 1 && y.n > 1) ? lcm_or_zero(x.s, y.s) : 0;
  const Index per_x = period ? period / x.s : 0;  // blocks of x per period
  const Index per_y = period ? period / y.s : 0;
  const Index last_u1 = period ? std::min(u1_hi, u1_lo + per_x - 1) : u1_hi;

  PieceSink sink(out);
  for (Index u1 = u1_lo; u1 <= last_u1; ++u1) {
    const Index lo = x.o + u1 * x.s, hi = lo + x.b;
    // Blocks u2 of y with y.o + u2 y.s < hi and y.o + u2 y.s + y.b > lo. Below
    // 0 they do not exist, but in a periodic pattern their images a few
    // periods on may: t0 below skips the periods in which they do not.
    Index u2_lo = y.n == 1 ? 0 : ceil_div(lo - y.o - y.b + 1, y.s);
    const Index u2_hi = y.n == 1 ? 0 : std::min(y.n - 1, floor_div(hi - 1 - y.o, y.s));
    if (!period) u2_lo = std::max<Index>(0, u2_lo);
    for (Index u2 = u2_lo; u2 <= u2_hi; ++u2) {
      const Index ys = y.o + u2 * y.s;
      const Index start = std::max(lo, ys), end = std::min(hi, ys + y.b);
      if (start >= end) continue;  // only with y.n == 1, whose single block may miss this one
      if (!period) {
        sink.add(start, end - start, 0, 1);
        continue;
      }
      const Index t0 = u2 < 0 ? ceil_div(-u2, per_y) : 0;
      const Index t1 = std::min(ceil_div(x.n - u1, per_x), ceil_div(y.n - u2, per_y));
      if (t1 > t0) sink.add(start + t0 * period, end - start, period, t1 - t0);
    }
    sink.flush();
  }
  return out;
}

LddSet intersect(const LddSet& a, const LddSet& c) {
  LddSet out;
  for (const Ldd& x : a) {
    for (const Ldd& y : c) {
      const LddSet part = intersect(x, y);
      out.insert(out.end(), part.begin(), part.end());
    }
  }
  return out;
}

bool MultiLdd::empty() const noexcept {
  return std::any_of(dims.begin(), dims.end(), [](const LddSet& d) { return redistribution::size(d) == 0; });
}

Index MultiLdd::size() const noexcept {
  Index total = 1;
  for (const LddSet& d : dims) total *= redistribution::size(d);
  return total;
}

MultiLdd intersect(const MultiLdd& a, const MultiLdd& c) {
  if (a.dims.size() != c.dims.size()) {
    throw InvalidArgument("switchyard: intersect: a " + std::to_string(a.dims.size()) + "-dimensional LDD and a " +
                          std::to_string(c.dims.size()) + "-dimensional one");
  }
  MultiLdd out;
  out.dims.reserve(a.dims.size());
  for (std::size_t d = 0; d < a.dims.size(); ++d) out.dims.push_back(intersect(a.dims[d], c.dims[d]));
  return out;
}

}  // namespace switchyard::schedulers::redistribution
