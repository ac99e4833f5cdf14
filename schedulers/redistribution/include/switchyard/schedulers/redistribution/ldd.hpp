#pragma once
/// @file
/// Local data descriptors (Guo-Nakata-Yamashita §3).
///
/// A 1-D LDD d = (o, b, s, n) is the set of global indices
///     S[d] = { i | o + s*u <= i < o + b + s*u, 0 <= u < n }:
/// n equally spaced blocks of b elements, the first starting at o, one every s.
/// Indices here are 0-based (the paper counts array elements from 1).
///
/// The intersection of two LDDs is not one LDD in general but a finite union
/// of them (an LddSet): the pattern of overlapping blocks repeats with the
/// period L = lcm(s1, s2), so every piece found in the first period is an LDD
/// with stride L. intersect() computes the pieces in closed form, from block
/// arithmetic, never by testing elements (see ldd.cpp).
///
/// A δ-dimensional LDD D = d_1 x ... x d_δ is the Cartesian product of one
/// LddSet per dimension, and D_i ∩ D_j = (d_i1 ∩ d_j1) x ... x (d_iδ ∩ d_jδ):
/// the intersection is taken dimension by dimension, and it is empty exactly
/// when one dimension's is (Lemma 2).

#include <vector>

#include "switchyard/schedulers/redistribution/distribution.hpp"

namespace switchyard::schedulers::redistribution {

/// A 1-D local data descriptor (o, b, s, n): n blocks of b indices, the first at o, one every s.
struct Ldd {
  Index o = 0;  ///< first index
  Index b = 0;  ///< block length
  Index s = 0;  ///< stride between consecutive blocks (>= b when n > 1)
  Index n = 0;  ///< number of blocks

  bool empty() const noexcept { return b == 0 || n == 0; }  ///< no index at all
  Index size() const noexcept { return empty() ? 0 : b * n; }  ///< indices in S[d]
  bool contains(Index i) const noexcept;  ///< whether i is in S[d]
  bool operator==(const Ldd&) const = default;  ///< same four numbers
};

/// A union of pairwise disjoint LDDs.
using LddSet = std::vector<Ldd>;

/// Indices in the union: the sum of the LDDs' sizes.
Index size(const LddSet& set) noexcept;
/// The index set, ascending: for tests and small arrays.
std::vector<Index> index_set(const Ldd& d);
std::vector<Index> index_set(const LddSet& set);  ///< the same for a union

/// S[a] ∩ S[c] as disjoint LDDs. Throws InvalidArgument for an LDD whose blocks
/// overlap or run backwards (b < 0, s < b with n > 1, n < 0).
LddSet intersect(const Ldd& a, const Ldd& c);
/// The same for unions: every pair's intersection.
LddSet intersect(const LddSet& a, const LddSet& c);

/// D = d_1 x ... x d_δ.
struct MultiLdd {
  std::vector<LddSet> dims;  ///< d_1 .. d_δ, one LddSet per dimension

  bool empty() const noexcept;  ///< some dimension is empty
  Index size() const noexcept;  ///< product of the dimensions' sizes
};

/// Lemma 2: dimension by dimension. Throws InvalidArgument if the ranks differ.
MultiLdd intersect(const MultiLdd& a, const MultiLdd& c);

}  // namespace switchyard::schedulers::redistribution
