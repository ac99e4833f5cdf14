#pragma once
// Communication matrices shared by the exchange tests (executor, online schemes,
// Generate_Recv): the papers' random patterns and the awkward corners.

#include <algorithm>
#include <cstdint>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <vector>

namespace sytest {

using switchyard::Rank;
using switchyard::schedulers::CommMatrix;

// One runtime per test program, on every usable core.
inline switchyard::Runtime& runtime() {
  static switchyard::Runtime rt;
  return rt;
}

inline switchyard::RunOptions run_options(std::size_t ring_capacity = 1024) {
  switchyard::RunOptions o;
  o.ring_capacity = ring_capacity;
  o.stall_timeout = std::chrono::milliseconds(20'000);
  return o;
}

// A scheduler's name as a test name ("optimal-bytes" -> "optimal_bytes"):
// GoogleTest allows only letters, digits and underscores.
inline std::string identifier(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// The process counts every scheme is run on.
inline const std::vector<Rank> kProcessCounts{1, 2, 3, 7, 32, 100, 128};

// Sizes on both sides of the runtime's eager limit (1024 bytes): copied
// through the ring below it, copied once by the receiver above it.
inline constexpr std::uint64_t kUniformBytes = 1500;
inline constexpr std::uint64_t kNonuniformUnit = 48;  // 48 .. 1536 bytes

inline Rank density_for(Rank n) { return std::min<Rank>(n, 6); }

struct Case {
  std::string name;
  CommMatrix m;
};

// The corners: no messages at all, processes that send nothing, processes that
// send to themselves, one process sending to everyone (and everyone to one),
// and sizes around every boundary of the transport.
inline std::vector<Case> special_cases(Rank n) {
  std::vector<Case> cases;
  cases.push_back({"empty", CommMatrix(n)});

  CommMatrix empty_rows = switchyard::schedulers::fig7_matrix(n, std::min<Rank>(n, 3), 700, 11);
  for (Rank i = 0; i < n; i += 2) {
    const std::vector<switchyard::schedulers::MatrixEntry> row(empty_rows.row(i).begin(), empty_rows.row(i).end());
    for (const auto& e : row) empty_rows.set(i, e.peer, 0);
  }
  cases.push_back({"empty_rows", std::move(empty_rows)});

  CommMatrix self(n);
  for (Rank i = 0; i < n; ++i) {
    self.set(i, i, 2000 + i);
    self.set(i, (i + 1) % n, 100 + i);
  }
  cases.push_back({"self_messages", std::move(self)});

  CommMatrix dense_row(n);
  for (Rank j = 0; j < n; ++j) dense_row.set(0, j, 3000 + j);
  for (Rank i = 1; i < n; ++i) dense_row.set(i, (i + 1) % n, 500);
  cases.push_back({"dense_row", std::move(dense_row)});

  CommMatrix dense_column(n);
  for (Rank i = 0; i < n; ++i) dense_column.set(i, 0, 1100 + 7 * i);
  cases.push_back({"dense_column", std::move(dense_column)});

  const std::uint64_t sizes[] = {1, 7, 47, 48, 49, 64, 1023, 1024, 1025, 65536, 100'001};
  CommMatrix mixed(n);
  for (Rank i = 0; i < n; ++i) {
    for (Rank k = 0; k < std::min<Rank>(n, 4); ++k)
      mixed.set(i, (i + k * 3 + 1) % n, sizes[(i + k) % std::size(sizes)]);
  }
  cases.push_back({"mixed_sizes", std::move(mixed)});
  return cases;
}

inline CommMatrix uniform_case(Rank n, std::uint64_t seed = 5) {
  return switchyard::schedulers::fig7_matrix(n, density_for(n), kUniformBytes, seed);
}
inline CommMatrix nonuniform_case(Rank n, std::uint64_t seed = 6) {
  return switchyard::schedulers::nonuniform_matrix(n, density_for(n), kNonuniformUnit, seed);
}

}  // namespace sytest
