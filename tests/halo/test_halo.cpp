// The halo library: the Matrix Market reader into CSR (every field and
// symmetry, the reader's errors), row partitions, and the halo exchange,
// verified element by element: forward against the owners' entries and a
// product against the sequential one (bit for bit), reverse against sums made
// sequentially in the same order; on lund_a, pores_1 and generated matrices,
// for 1, 2, 7, 16, 64, 147 and 200 blocks (empty ones among them), with every
// scheduler; the maps made collectively (create) equal to those from the
// matrix. Every check runs inside the processes, so the same tests run across
// MPI nodes (mpi.halo.np2).

#include <switchyard/halo/halo_exchange.hpp>
#include <switchyard/machine_memory.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/scheduler_table.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <complex>
#include <functional>
#include <random>
#include <sstream>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::halo;
namespace sys = switchyard::schedulers;

const std::string kData = SWITCHYARD_TEST_DATA;

template <class T>
CsrMatrix<T> read(const std::string& text, const std::string& name = "m.mtx") {
  std::istringstream in(text);
  return read_csr_matrix_market<T>(in, name);
}

std::string error_of(const std::string& text) {
  try {
    (void)read<double>(text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(MatrixMarketCsr, LundAIsSymmetricAndMirrored) {
  const auto a = read_csr_matrix_market_file<double>(kData + "/lund_a.mtx");
  EXPECT_EQ(a.rows, 147u);
  EXPECT_EQ(a.columns, 147u);
  EXPECT_EQ(a.nonzeros(), 2449u);  // 1298 stored, 147 of them on the diagonal
  EXPECT_EQ(a.value[0], 7.5e7);  // (1, 1)
  for (std::uint64_t i = 0; i < a.rows; ++i) {
    const auto cols = a.row_columns(i);
    ASSERT_TRUE(std::is_sorted(cols.begin(), cols.end()));
    for (std::size_t k = 0; k < cols.size(); ++k) {
      const auto back = a.row_columns(cols[k]);
      const auto at = std::lower_bound(back.begin(), back.end(), i);
      ASSERT_TRUE(at != back.end() && *at == i) << "(" << i << ", " << cols[k] << ") has no mirror";
      EXPECT_EQ(a.row_values(cols[k])[at - back.begin()], a.row_values(i)[k]);
    }
  }
  const auto p = read_csr_matrix_market_file<double>(kData + "/pores_1.mtx");
  EXPECT_EQ(p.rows, 30u);
  EXPECT_EQ(p.nonzeros(), 180u);
}

TEST(MatrixMarketCsr, EveryFieldAndSymmetry) {
  const auto integer = read<double>("%%MatrixMarket matrix coordinate integer general\n2 3 2\n1 3 -4\n2 1 9\n");
  EXPECT_EQ(integer.columns, 3u);
  EXPECT_EQ(integer.column, (std::vector<ColumnIndex>{2, 0}));
  EXPECT_EQ(integer.value, (std::vector<double>{-4, 9}));
  const auto pattern = read<double>("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n");
  EXPECT_EQ(pattern.row_start, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(pattern.column, (std::vector<ColumnIndex>{1, 0, 2}));
  EXPECT_EQ(pattern.value, (std::vector<double>{1, 1, 1}));
  const auto skew = read<double>("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 2.5\n");
  EXPECT_EQ(skew.value, (std::vector<double>{-2.5, 2.5}));  // (1, 2) = -(2, 1)
  using C = std::complex<double>;
  const auto herm = read<C>("%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 3 0\n2 1 1 2\n");
  EXPECT_EQ(herm.value, (std::vector<C>{C(3, 0), C(1, -2), C(1, 2)}));
  const auto real_as_complex = read<C>("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 0.5\n");
  EXPECT_EQ(real_as_complex.value, (std::vector<C>{C(0.5, 0)}));
  const auto empty = read<double>("%%MatrixMarket matrix coordinate real general\n% nothing\n4 4 0\n");
  EXPECT_EQ(empty.row_start, (std::vector<std::uint64_t>(5, 0)));
}

TEST(MatrixMarketCsr, ErrorsNameTheFileAndLine) {
  const std::string real = "%%MatrixMarket matrix coordinate real general\n";
  EXPECT_EQ(error_of(""), "m.mtx:1: empty file: expected a %%MatrixMarket header");
  EXPECT_EQ(error_of("%%MatrixMarket matrix array real general\n2 2\n"),
            "m.mtx:1: expected '%%MatrixMarket matrix coordinate real|integer|complex|pattern "
            "general|symmetric|skew-symmetric|hermitian', found '%%MatrixMarket matrix array real general'");
  EXPECT_EQ(error_of("%%MatrixMarket matrix coordinate complex general\n1 1 0\n"),
            "m.mtx:1: a complex matrix: read it as CsrMatrix<std::complex<double>>");
  EXPECT_EQ(error_of("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n"),
            "m.mtx:1: a hermitian matrix is complex, this one is real (a real one is symmetric)");
  EXPECT_EQ(error_of("%%MatrixMarket matrix coordinate pattern skew-symmetric\n1 1 0\n"),
            "m.mtx:1: a pattern matrix cannot be skew-symmetric: its entries have no sign");
  EXPECT_EQ(error_of(real), "m.mtx:1: the file ends before its 'rows columns entries' line");
  EXPECT_EQ(error_of(real + "3 3\n"), "m.mtx:2: expected 'rows columns entries', found '3 3'");
  EXPECT_EQ(error_of(real + "3 3 1\n4 1 1.0\n"), "m.mtx:3: row 4 is outside 1..3");
  EXPECT_EQ(error_of(real + "3 3 1\n1 0 1.0\n"), "m.mtx:3: column 0 is outside 1..3");
  EXPECT_EQ(error_of(real + "3 3 1\n1 x 1.0\n"), "m.mtx:3: column 'x' is not a non-negative whole number");
  EXPECT_EQ(error_of(real + "3 3 1\n1 1 one\n"), "m.mtx:3: value 'one' of entry (1, 1) is not a finite number");
  EXPECT_EQ(error_of(real + "3 3 1\n1 1\n"), "m.mtx:3: expected 'row column value', found '1 1'");
  EXPECT_EQ(error_of(real + "3 3 1\n1 1 2\n2 2 2\n"), "m.mtx:4: more entries than the 1 announced");
  EXPECT_EQ(error_of(real + "3 3 3\n1 1 2\n"), "m.mtx:3: the header announces 3 entries, the file has 1");
  EXPECT_EQ(error_of(real + "3 3 3\n1 2 2\n% between\n2 2 2\n1 2 3\n"),
            "m.mtx:6: entry (1, 2) appears twice (also on line 3)");
  // A symmetric file's entry given in both triangles is given twice.
  EXPECT_EQ(error_of("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1\n1 2 1\n"),
            "m.mtx:4: entry (1, 2) appears twice (also on line 3)");
  EXPECT_EQ(error_of("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n"),
            "m.mtx:3: entry (2, 2) is on the diagonal, which a skew-symmetric matrix has zero and does not store");
  EXPECT_EQ(error_of("%%MatrixMarket matrix coordinate real symmetric\n3 4 0\n"),
            "m.mtx:2: a symmetric matrix is square, this one is 3 x 4");
  EXPECT_EQ(error_of(real + "3 3 " + std::to_string(kMaxSparseEntries + 1) + "\n"),
            "m.mtx:2: 2147483649 entries are more than the 2147483648 supported (2147483648 once mirrored)");
  EXPECT_EQ(error_of(std::string(2000, 'x')),
            "m.mtx:1: the line is longer than 1024 characters: not a Matrix Market file");
  EXPECT_THROW((void)read_csr_matrix_market_file<double>("/nonexistent.mtx"), InvalidArgument);
}

// What a header declares is refused up front when its arrays would exceed the
// machine (machine_memory.hpp): before a line of entries is read, so that a
// 3-line file cannot take gigabytes.
TEST(MatrixMarketCsr, DeclaredSizeBeyondTheMachineIsRefusedBeforeReading) {
  const std::string real = "%%MatrixMarket matrix coordinate real general\n";
  std::istringstream in(real + "4294967295 4294967295 2147483648\n% not an entry\n1 2 1.5\n");
  const MatrixMarketSize size = read_matrix_market_size(in, "m.mtx");
  EXPECT_EQ(size.rows, 4294967295u);
  EXPECT_EQ(size.columns, 4294967295u);
  EXPECT_EQ(size.entries, 2147483648u);
  EXPECT_EQ(size.stored_entries(), 2147483648u);
  // 34 GB of row starts and 2^31 entries: beyond every machine this runs on.
  ASSERT_TRUE(beyond_memory_bound(csr_read_bytes<double>(size)));
  const std::string refused = error_of(real + "4294967295 4294967295 2147483648\nnot an entry\n");
  EXPECT_TRUE(refused.starts_with("m.mtx:2: a matrix of 4294967295 x 4294967295 with 2147483648 entries needs about "))
      << refused;
  EXPECT_NE(refused.find(", the machine has "), std::string::npos) << refused;
  // Rows alone, in a 3-line file: 4e9 row starts are 32 GB.
  if (beyond_memory_bound(8 * 4e9)) {
    EXPECT_TRUE(error_of(real + "4000000000 4000000000 1\n1 2 1.5\n").starts_with("m.mtx:2: a matrix of 4000000000"));
  }
  // A symmetric file's entries count twice.
  std::istringstream symmetric("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n");
  EXPECT_EQ(read_matrix_market_size(symmetric, "s.mtx").stored_entries(), 4u);
  // What fits is read as before, and the size agrees with it.
  const auto small = read<double>(real + "1000 1000 1\n1 2 1.5\n");
  EXPECT_EQ(small.rows, 1000u);
  std::istringstream small_size(real + "1000 1000 1\n1 2 1.5\n");
  EXPECT_EQ(read_matrix_market_size(small_size, "m.mtx").rows, small.rows);
  EXPECT_THROW((void)read_matrix_market_size_file("/nonexistent.mtx"), InvalidArgument);
}

TEST(RowPartition, BlocksAndOwners) {
  const auto b = RowPartition::blocks(147, 16);  // 3 blocks of 10, 13 of 9
  EXPECT_EQ(b.rows_of(0).size(), 10u);
  EXPECT_EQ(b.rows_of(2).back(), 29u);
  EXPECT_EQ(b.rows_of(3).front(), 30u);
  EXPECT_EQ(b.rows_of(15).size(), 9u);
  EXPECT_EQ(b.owner(146), 15u);
  EXPECT_EQ(b.position(31), 1u);
  const auto wide = RowPartition::blocks(3, 5);
  EXPECT_EQ(wide.rows_of(4).size(), 0u);
  const auto o = RowPartition::owners({1, 0, 1, 1}, 3);
  EXPECT_EQ(std::vector<GlobalIndex>(o.rows_of(1).begin(), o.rows_of(1).end()), (std::vector<GlobalIndex>{0, 2, 3}));
  EXPECT_EQ(o.rows_of(2).size(), 0u);
  EXPECT_EQ(o.position(3), 2u);
  EXPECT_THROW((void)RowPartition::owners({0, 3}, 3), InvalidArgument);
  EXPECT_THROW((void)RowPartition::blocks(3, 0), InvalidArgument);
}

// A random square matrix with about `per_row` entries per row, values that
// are not round (so that a wrong order of summation shows).
CsrMatrix<double> random_matrix(std::uint64_t n, std::uint64_t per_row, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  CsrMatrix<double> a;
  a.rows = a.columns = n;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::vector<ColumnIndex> cols{static_cast<ColumnIndex>(i)};
    for (std::uint64_t k = 0; k < per_row; ++k) cols.push_back(static_cast<ColumnIndex>(rng() % n));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (ColumnIndex j : cols) {
      a.column.push_back(j);
      a.value.push_back(std::uniform_real_distribution<double>(-1, 1)(rng) / 3);
    }
    a.row_start.push_back(a.column.size());
  }
  return a;
}

// The 5-point Laplacian of a side x side grid.
CsrMatrix<double> laplacian(std::uint64_t side) {
  std::ostringstream mm;
  std::vector<std::string> lines;
  for (std::uint64_t r = 0; r < side; ++r) {
    for (std::uint64_t c = 0; c < side; ++c) {
      const std::uint64_t i = r * side + c + 1;
      lines.push_back(std::to_string(i) + " " + std::to_string(i) + " 4.1");
      if (c > 0) lines.push_back(std::to_string(i) + " " + std::to_string(i - 1) + " -1.3");
      if (r > 0) lines.push_back(std::to_string(i) + " " + std::to_string(i - side) + " -0.7");
    }
  }
  mm << "%%MatrixMarket matrix coordinate real symmetric\n"
     << side * side << " " << side * side << " " << lines.size() << "\n";
  for (const auto& l : lines) mm << l << "\n";
  return read<double>(mm.str());
}

std::vector<double> sequential_product(const CsrMatrix<double>& a, const std::vector<double>& x) {
  std::vector<double> y(a.rows, 0.0);
  for (std::uint64_t i = 0; i < a.rows; ++i) {
    for (std::uint64_t k = a.row_start[i]; k < a.row_start[i + 1]; ++k) y[i] += a.value[k] * x[a.column[k]];
  }
  return y;
}

double x_of(GlobalIndex g) { return 1.0 / (3.0 + static_cast<double>(g)); }
// What process q contributes to global index g in the reverse test, and its start value.
std::uint64_t contribution(Rank q, GlobalIndex g) { return sytest::mix(q, g) % 1000; }
std::uint64_t start_of(GlobalIndex g) { return 7 * g + 1; }

// reverse(plus) of every process's contributions to the ghosts it holds,
// summed in rank order, as the halo must sum them.
std::vector<std::uint64_t> expected_sums(const HaloExchange<double>& shape, std::uint64_t n) {
  std::vector<std::uint64_t> sum(n);
  for (GlobalIndex g = 0; g < n; ++g) sum[g] = start_of(g);
  for (Rank q = 0; q < shape.processes(); ++q) {
    for (GlobalIndex g : shape.map(q).ghosts) sum[g] += contribution(q, g);
  }
  return sum;
}

// Row i of the local product.
double local_row(const CsrMatrix<double>& local, std::span<const double> xl, std::uint64_t i) {
  double yi = 0;
  for (std::uint64_t k = local.row_start[i]; k < local.row_start[i + 1]; ++k)
    yi += local.value[k] * xl[local.column[k]];
  return yi;
}

// Whether row i of the local product reads a ghost (a column past the owned ones).
bool reads_ghosts(const CsrMatrix<double>& local, std::uint64_t owned, std::uint64_t i) {
  for (std::uint64_t k = local.row_start[i]; k < local.row_start[i + 1]; ++k) {
    if (local.column[k] >= owned) return true;
  }
  return false;
}

// The split phase of forward: the rows that read no ghost between the start
// and the wait (with the owned entries overwritten meanwhile: the start
// packed them), the others after; the products into y_local.
Task<void> split_forward(const HaloExchange<double>& halo, Process& p, const CsrMatrix<double>& local,
                         std::span<double> xl, std::span<double> y_local) {
  const HaloMap& m = halo.map(p.rank());
  const std::span<double> own = xl.first(m.owned.size());
  halo.start_forward(p, own, xl.subspan(m.owned.size()));
  std::vector<double> kept(own.begin(), own.end());
  std::fill(own.begin(), own.end(), -2.0);  // the owned entries are the process's again
  co_await p.yield();
  std::copy(kept.begin(), kept.end(), own.begin());
  for (std::uint64_t i = 0; i < local.rows; ++i) {
    if (!reads_ghosts(local, m.owned.size(), i)) y_local[i] = local_row(local, xl, i);
  }
  co_await halo.wait_forward(p);
  for (std::uint64_t i = 0; i < local.rows; ++i) {
    if (reads_ghosts(local, m.owned.size(), i)) y_local[i] = local_row(local, xl, i);
  }
}

// One job of rows.parts() processes: forward then a product checked bit for
// bit against the sequential one, then reverse (of uint64 contributions)
// checked against the sums made in rank order. Twice, to run the plans again;
// `split`: each through its split phase (start, work, wait).
void check_halo(Runtime& rt, const CsrMatrix<double>& a, const RowPartition& rows, const std::string& scheduler,
                const RunOptions& run_options, bool split = false,
                sys::ExchangeExecution execution = sys::ExchangeExecution::compiled) {
  sys::ExchangePlanOptions options;
  options.scheduler = scheduler;
  options.execution = execution;
  const HaloExchange<double> halo(a, rows, options);
  const HaloExchange<std::uint64_t> sums(a, rows, options);
  std::vector<double> x(a.rows);
  for (GlobalIndex g = 0; g < a.rows; ++g) x[g] = x_of(g);
  const std::vector<double> y = sequential_product(a, x);
  const std::vector<std::uint64_t> summed = expected_sums(halo, a.rows);
  const std::string what = scheduler + ", " + std::to_string(rows.parts()) + " parts";
  rt.run(
      rows.parts(),
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        const HaloMap& m = halo.map(me);
        const CsrMatrix<double> local = halo.local_rows(a, me);
        std::vector<double> xl(m.local_size(), -1.0);
        std::vector<std::uint64_t> owned(m.owned.size()), ghosts(m.ghosts.size());
        for (int round = 0; round < 2; ++round) {
          for (std::size_t i = 0; i < m.owned.size(); ++i) xl[i] = x_of(m.owned[i]);
          std::fill(xl.begin() + static_cast<std::ptrdiff_t>(m.owned.size()), xl.end(), -1.0);
          const std::span<double> own = std::span(xl).first(m.owned.size());
          std::vector<double> y_local(local.rows);
          if (split) {
            co_await split_forward(halo, p, local, xl, y_local);
          } else {
            co_await halo.forward(p, own, std::span(xl).subspan(m.owned.size()));
            for (std::uint64_t i = 0; i < local.rows; ++i) y_local[i] = local_row(local, xl, i);
          }
          for (std::size_t k = 0; k < m.ghosts.size(); ++k) {
            SY_CHECK(xl[m.owned.size() + k] == x_of(m.ghosts[k]), what << ": rank " << me << " ghost " << k);
          }
          for (std::uint64_t i = 0; i < local.rows; ++i) {
            SY_CHECK(y_local[i] == y[m.owned[i]], what << ": y[" << m.owned[i] << "] on rank " << me);
          }
          for (std::size_t k = 0; k < ghosts.size(); ++k) ghosts[k] = contribution(me, m.ghosts[k]);
          if (split) {
            std::fill(owned.begin(), owned.end(), 0);
            sums.start_reverse(p, std::span<const std::uint64_t>(ghosts), std::span(owned));
            // The owned entries are the process's until the wait, which adds into them.
            for (std::size_t i = 0; i < owned.size(); ++i) owned[i] = start_of(m.owned[i]);
            co_await p.yield();
            co_await sums.wait_reverse(p, std::plus<>{});
          } else {
            for (std::size_t i = 0; i < owned.size(); ++i) owned[i] = start_of(m.owned[i]);
            co_await sums.reverse(p, std::span<const std::uint64_t>(ghosts), std::span(owned), std::plus<>{});
          }
          for (std::size_t i = 0; i < owned.size(); ++i) {
            SY_CHECK(owned[i] == summed[m.owned[i]], what << ": reverse sum of " << m.owned[i] << " on rank " << me);
          }
        }
      },
      run_options);
}

std::vector<std::string> every_scheduler() {
  auto names = sys::default_exchange_schedulers();
  names.push_back("auto");
  return names;
}

RunOptions run_options() {
  RunOptions o;
  o.stall_timeout = std::chrono::milliseconds(60'000);
  o.strict = true;  // a halo leaves no message behind
  return o;
}

TEST(HaloExchange, LundAEveryBlockCountEveryScheduler) {
  Runtime rt;
  const auto a = read_csr_matrix_market_file<double>(kData + "/lund_a.mtx");
  for (Rank blocks : {1u, 2u, 7u, 16u, 64u, 147u, 200u}) {
    for (const std::string& s : every_scheduler())
      check_halo(rt, a, RowPartition::blocks(a.rows, blocks), s, run_options());
  }
}

TEST(HaloExchange, GeneratedAndPores1) {
  Runtime rt;
  const std::vector<CsrMatrix<double>> matrices{random_matrix(120, 6, 1), laplacian(12),
                                                read_csr_matrix_market_file<double>(kData + "/pores_1.mtx")};
  for (const auto& a : matrices) {
    for (Rank blocks : {1u, 2u, 7u, 16u, 64u, 147u}) {
      for (const char* s : {"optimal", "ac", "drsn"})
        check_halo(rt, a, RowPartition::blocks(a.rows, blocks), s, run_options());
    }
  }
}

// The split phase (start, the rows that need no ghost, wait, the others;
// reverse's owned entries written between its start and its wait) gives the
// same bits as the sequential product and sums: with processes far beyond
// the cores and at one per core, compiled and on messages.
TEST(HaloExchange, SplitPhaseGivesTheSameBits) {
  Runtime rt;
  const std::vector<CsrMatrix<double>> matrices{read_csr_matrix_market_file<double>(kData + "/lund_a.mtx"),
                                                random_matrix(120, 6, 1), laplacian(12)};
  for (const auto& a : matrices) {
    for (Rank blocks : {1u, 2u, 7u, 64u, 147u}) {
      if (blocks > a.rows + 30) continue;
      for (const char* s : {"optimal", "ac", "drsn"}) {
        for (const auto execution : {sys::ExchangeExecution::compiled, sys::ExchangeExecution::messages})
          check_halo(rt, a, RowPartition::blocks(a.rows, blocks), s, run_options(), true, execution);
      }
    }
  }
}

// A second start before the wait, and a wait without a start: InvalidArgument, its message checked.
TEST(HaloExchange, SplitPhaseMisuseIsInvalidArgument) {
  Runtime rt;
  const auto a = laplacian(8);
  const HaloExchange<double> halo(a, RowPartition::blocks(a.rows, 4));
  for (const bool second_start : {true, false}) {
    std::string what = "(no error)";
    try {
      rt.run(4, [&](Process& p) -> Task<void> {
        const HaloMap& m = halo.map(p.rank());
        std::vector<double> xl(m.local_size(), 1.0);
        const std::span<double> own = std::span(xl).first(m.owned.size());
        if (second_start || p.rank() != 2) halo.start_forward(p, own, std::span(xl).subspan(m.owned.size()));
        if (second_start && p.rank() == 2) halo.start_forward(p, own, std::span(xl).subspan(m.owned.size()));
        co_await halo.wait_forward(p);
      });
    } catch (const InvalidArgument& e) {
      what = e.what();
    }
    EXPECT_NE(what.find(second_start ? "HaloExchange::start_forward on rank 2: a second start before the wait"
                                     : "ExchangePlan::wait on rank 2: no start to wait for"),
              std::string::npos)
        << what;
  }
}

// A second start (or a forward) refused while the first is in flight, through the plan's
// refusal (the other cores stop first) and before it packs into the buffer
// that the first run's copies read: InvalidArgument naming the halo's call,
// the job ends, and the ghosts that the refusal unwinds are no core's any
// more (ASan, TSan). Rank 1 works before its second start without a yield;
// the first forward of each job makes the starts publish at once.
TEST(HaloExchange, ASecondStartStopsTheOtherCoresCopiesBeforeItPacks) {
  Runtime rt;
  const auto a = laplacian(128);
  const HaloExchange<double> halo(a, RowPartition::blocks(a.rows, 2));
  for (int round = 0; round < 5; ++round) {
    std::string what = "(no error)";
    try {
      rt.run(2, [&](Process& p) -> Task<void> {
        const HaloMap& m = halo.map(p.rank());
        std::vector<double> xl(m.local_size(), 1.0 + round);
        const std::span<double> own = std::span(xl).first(m.owned.size()), ghosts = std::span(xl).subspan(own.size());
        co_await halo.forward(p, own, ghosts);
        halo.start_forward(p, own, ghosts);
        if (p.rank() == 1) {
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
          while (std::chrono::steady_clock::now() < until) {
          }
          for (double& x : own) x += 1.0;  // the next start's values
          if (round % 2 == 0) halo.start_forward(p, own, ghosts);
          if (round % 2 == 1) co_await halo.forward(p, own, ghosts);
        }
        co_await halo.wait_forward(p);
      });
    } catch (const InvalidArgument& e) {
      what = e.what();
    }
    const std::string call = round % 2 == 0 ? "HaloExchange::start_forward" : "HaloExchange::forward";
    EXPECT_NE(what.find(call + " on rank 1: a second start before the wait"), std::string::npos) << what;
  }
}

// forward runs on a binding of its plan to owned and the ghosts where they
// stay put, sending straight from owned, and start_forward on a binding to
// its packing buffer and the ghosts: ghosts that move between calls (to
// another buffer, alternating, back), owned entries that move every third
// call, and a second job whose buffers are where the first job's were (its
// binding is the ended job's), get every ghost of every call, in both forms.
TEST(HaloExchange, ForwardWhereTheGhostsMoveBetweenCallsAndJobs) {
  Runtime rt;
  const auto a = laplacian(12);
  const Rank parts = 6;
  const HaloExchange<double> halo(a, RowPartition::blocks(a.rows, parts));
  std::vector<std::vector<double>> owned_a(parts), owned_b(parts), ghosts_a(parts), ghosts_b(parts);  // both jobs'
  for (Rank r = 0; r < parts; ++r) {
    owned_a[r].resize(halo.map(r).owned.size());
    owned_b[r].resize(halo.map(r).owned.size());
    ghosts_a[r].resize(halo.map(r).ghosts.size());
    ghosts_b[r].resize(halo.map(r).ghosts.size());
  }
  // Call k's ghosts: in A three times, then in B and A in turn, then in B;
  // the second job the other way round, from B, where the first job's binding is.
  const auto in_b = [](int job, int k) { return (k >= 3 && (k >= 7 || k % 2 == 1)) != (job == 1); };
  const auto value = [](GlobalIndex g, int job, int k) { return static_cast<double>(g) + 1000.0 * (job * 10 + k); };
  for (int job = 0; job < 4; ++job) {  // jobs 2 and 3: jobs 0 and 1 again, split
    rt.run(parts, [&](Process& p) -> Task<void> {
      const Rank me = p.rank();
      const HaloMap& m = halo.map(me);
      for (int k = 0; k < 10; ++k) {
        std::vector<double>& owned = k % 3 == 2 ? owned_b[me] : owned_a[me];
        for (std::size_t i = 0; i < m.owned.size(); ++i) owned[i] = value(m.owned[i], job, k);
        std::vector<double>& ghosts = in_b(job % 2, k) ? ghosts_b[me] : ghosts_a[me];
        std::fill(ghosts.begin(), ghosts.end(), -1.0);
        if (job < 2) {
          co_await halo.forward(p, owned, ghosts);
        } else {
          halo.start_forward(p, owned, ghosts);
          co_await halo.wait_forward(p);
        }
        for (std::size_t g = 0; g < m.ghosts.size(); ++g) {
          SY_CHECK(ghosts[g] == value(m.ghosts[g], job, k),
                   "job " << job << ", call " << k << ": rank " << me << " ghost " << g);
        }
      }
    });
  }
}

// forward and start_forward send the bits `owned` holds at each call, though
// their packing stores only the entries whose bytes changed: owned entries
// that go from 0.0 to -0.0 (equal as doubles) and between NaNs (unequal to
// themselves), each value in two calls running, reach every ghost bit for
// bit. lund_a in 16 blocks has messages whose entries are not one run of
// `owned` (packed ones).
TEST(HaloExchange, EveryCallSendsTheOwnedBitsWhereValuesCompareEqual) {
  Runtime rt;
  const auto a = read_csr_matrix_market_file<double>(kData + "/lund_a.mtx");
  const Rank parts = 16;
  const HaloExchange<double> halo(a, RowPartition::blocks(a.rows, parts));
  std::uint64_t packed_messages = 0;
  for (Rank r = 0; r < parts; ++r) {
    const HaloMap& m = halo.map(r);
    for (std::size_t d = 0; d < m.destinations.size(); ++d) {
      for (std::uint64_t k = m.destination_start[d] + 1; k < m.destination_start[d + 1]; ++k) {
        if (m.sent[k] != m.sent[k - 1] + 1) {
          ++packed_messages;
          break;
        }
      }
    }
  }
  ASSERT_GT(packed_messages, 0u);
  // Call c's bits for global entry g: 0.0, -0.0, then two NaNs, each twice.
  const auto bits = [](GlobalIndex g, int c) -> std::uint64_t {
    switch (c / 2 % 4) {
      case 0:
        return 0;
      case 1:
        return std::uint64_t{1} << 63;
      case 2:
        return 0x7ff8000000000000 | (g + 1);
      default:
        return 0x7ff8000000000000 | ((g + 1) << 20);
    }
  };
  rt.run(
      parts,
      [&](Process& p) -> Task<void> {
        const HaloMap& m = halo.map(p.rank());
        std::vector<double> owned(m.owned.size()), ghosts(m.ghosts.size());
        for (int c = 0; c < 16; ++c) {
          for (std::size_t i = 0; i < owned.size(); ++i) owned[i] = std::bit_cast<double>(bits(m.owned[i], c));
          std::fill(ghosts.begin(), ghosts.end(), 1.0);
          if (c % 3 == 2) {
            halo.start_forward(p, owned, ghosts);
            co_await halo.wait_forward(p);
          } else {
            co_await halo.forward(p, owned, ghosts);
          }
          for (std::size_t g = 0; g < ghosts.size(); ++g) {
            SY_CHECK(std::bit_cast<std::uint64_t>(ghosts[g]) == bits(m.ghosts[g], c),
                     "call " << c << ": rank " << p.rank() << " ghost " << g);
          }
        }
      },
      run_options());
}

// start_forward packs a message whose entries are one run of `owned` of
// 128 bytes or more with one compare and one copy, shorter ones entry by
// entry: a change of any one entry, anywhere in a run, reaches its ghost.
// Each call changes one owned entry per process (the next one each call, the
// last call's back as it was); lund_a in 4 blocks (runs of up to 23 entries,
// most of them below 128 bytes) and a 24 x 24 grid's Laplacian in 4 blocks of
// 6 grid rows (runs of 24).
void start_forward_sends_every_change(const CsrMatrix<double>& a, Rank parts, std::uint64_t longest_run) {
  Runtime rt;
  const HaloExchange<double> halo(a, RowPartition::blocks(a.rows, parts));
  std::vector<std::pair<Rank, std::size_t>> owner_of(a.rows);  // global entry -> (owner, index in its owned)
  std::uint64_t longest = 0;
  for (Rank r = 0; r < parts; ++r) {
    const HaloMap& m = halo.map(r);
    for (std::size_t i = 0; i < m.owned.size(); ++i) owner_of[m.owned[i]] = {r, i};
    for (std::size_t d = 0; d < m.destinations.size(); ++d) {
      bool run = true;
      for (std::uint64_t k = m.destination_start[d] + 1; k < m.destination_start[d + 1]; ++k)
        run = run && m.sent[k] == m.sent[k - 1] + 1;
      if (run) longest = std::max(longest, m.destination_start[d + 1] - m.destination_start[d]);
    }
  }
  ASSERT_EQ(longest, longest_run);
  // Call c's value of global entry g: g, but -g - c at the one index c of its owner's owned (mod their count).
  const auto value = [&](GlobalIndex g, int c) {
    const auto [r, i] = owner_of[g];
    return i == static_cast<std::size_t>(c) % halo.map(r).owned.size() ? -static_cast<double>(g) - c
                                                                       : static_cast<double>(g);
  };
  const int calls = static_cast<int>(a.rows / parts) + 20;  // every owned index changes once or more
  rt.run(
      parts,
      [&](Process& p) -> Task<void> {
        const HaloMap& m = halo.map(p.rank());
        std::vector<double> owned(m.owned.size()), ghosts(m.ghosts.size());
        for (int c = 0; c < calls; ++c) {
          for (std::size_t i = 0; i < owned.size(); ++i) owned[i] = value(m.owned[i], c);
          std::fill(ghosts.begin(), ghosts.end(), 0.5);
          halo.start_forward(p, owned, ghosts);
          co_await halo.wait_forward(p);
          for (std::size_t g = 0; g < ghosts.size(); ++g) {
            SY_CHECK(ghosts[g] == value(m.ghosts[g], c), "call " << c << ": rank " << p.rank() << " ghost " << g);
          }
        }
      },
      run_options());
}

TEST(HaloExchange, StartForwardSendsAChangeAnywhereInARun) {
  start_forward_sends_every_change(read_csr_matrix_market_file<double>(kData + "/lund_a.mtx"), 4, 23);
  start_forward_sends_every_change(laplacian(24), 4, 24);
}

// Owners per row, scattered: a process's rows are not contiguous, some own none.
TEST(HaloExchange, OwnerPerRowPartition) {
  Runtime rt;
  const auto a = random_matrix(90, 5, 2);
  std::vector<Rank> owner(a.rows);
  for (GlobalIndex i = 0; i < a.rows; ++i)
    owner[i] = static_cast<Rank>(sytest::mix(i, 3) % 9) * 2;  // odd parts own nothing
  for (const char* s : {"optimal", "cgm", "ac"}) check_halo(rt, a, RowPartition::owners(owner, 18), s, run_options());
}

// create(): each process knows only what it owns and needs; its map must be
// the one the whole matrix gives, and its runs as right.
TEST(HaloExchange, CreateFromOwnedAndNeededMatchesTheMatrix) {
  Runtime rt;
  const auto a = read_csr_matrix_market_file<double>(kData + "/lund_a.mtx");
  for (Rank blocks : {1u, 7u, 64u, 200u}) {
    const auto rows = RowPartition::blocks(a.rows, blocks);
    const HaloExchange<double> whole(a, rows);
    for (const char* s : {"optimal", "ac", "lp"}) {
      rt.run(
          blocks,
          [&](Process& p) -> Task<void> {
            const Rank me = p.rank();
            const auto owned = rows.rows_of(me);
            std::vector<GlobalIndex> needed;
            for (GlobalIndex i : owned) {
              for (ColumnIndex j : a.row_columns(i)) needed.push_back(j);  // repeats and its own among them
            }
            sys::ExchangePlanOptions options;
            options.scheduler = s;
            const HaloExchange<double> mine = co_await HaloExchange<double>::create(p, owned, needed, options);
            const HaloMap &got = mine.map(me), &want = whole.map(me);
            SY_CHECK(got.owned == want.owned && got.ghosts == want.ghosts && got.sources == want.sources &&
                         got.source_start == want.source_start && got.destinations == want.destinations &&
                         got.destination_start == want.destination_start && got.sent == want.sent,
                     "rank " << me << " of " << blocks << ": create's map differs from the matrix's");
            std::vector<double> x(got.local_size());
            for (std::size_t i = 0; i < owned.size(); ++i) x[i] = x_of(owned[i]);
            co_await mine.forward(p, std::span<const double>(x).first(owned.size()),
                                  std::span(x).subspan(owned.size()));
            for (std::size_t k = 0; k < got.ghosts.size(); ++k)
              SY_CHECK(x[owned.size() + k] == x_of(got.ghosts[k]), "ghost");
            std::vector<double> back(got.ghosts.size(), 1.0), mine_owned(owned.size(), 0.0);
            co_await mine.reverse(p, std::span<const double>(back), std::span(mine_owned), std::plus<>{});
            for (std::size_t i = 0; i < owned.size(); ++i) {
              // Every holder of owned[i] as a ghost added 1.
              double holders = 0;
              for (Rank q = 0; q < blocks; ++q)
                holders += whole.map(q).local_index(owned[i]) != HaloMap::kNotLocal && q != me;
              SY_CHECK(mine_owned[i] == holders, "reverse count of " << owned[i]);
            }
          },
          run_options());
    }
  }
}

TEST(HaloExchange, BadInputIsInvalidArgument) {
  Runtime rt;
  const auto a = read<double>("%%MatrixMarket matrix coordinate real general\n2 3 1\n1 3 1\n");
  EXPECT_THROW(HaloExchange<double>(a, RowPartition::blocks(2, 2)), InvalidArgument);  // not square
  const auto sq = random_matrix(10, 3, 4);
  EXPECT_THROW(HaloExchange<double>(sq, RowPartition::blocks(9, 2)), InvalidArgument);  // partition of 9 rows
  const HaloExchange<double> halo(sq, RowPartition::blocks(10, 2));
  EXPECT_THROW((void)halo.map(2), InvalidArgument);
  std::string message;
  try {
    rt.run(2, [&](Process& p) -> Task<void> {
      std::vector<double> owned(5), ghosts(halo.map(p.rank()).ghosts.size() + 1);
      co_await halo.forward(p, std::span<const double>(owned), std::span(ghosts));
    });
  } catch (const InvalidArgument& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("HaloExchange::forward on rank"), std::string::npos) << message;
  // create(): an index owned twice, and one nobody owns.
  for (const bool twice : {true, false}) {
    try {
      rt.run(2, [&](Process& p) -> Task<void> {
        const std::vector<GlobalIndex> owned{p.rank() == 0 || twice ? 5u : 6u}, needed{twice ? 5u : 9u};
        (void)co_await HaloExchange<double>::create(p, owned, needed);
      });
      message.clear();
    } catch (const InvalidArgument& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(twice ? "global index 5 is owned by rank 0 and by rank 1"
                                 : "needs global index 9, which no member owns"),
              std::string::npos)
        << message;
  }
}

}  // namespace
