// Sparse transposition (Varvarigos section 3.2): matrices with M1 dense columns
// and M2 dense rows at random positions, with and without scattered nonzeros,
// written to Matrix Market text and read back, then transposed by PMNS + PMNG,
// by a total exchange and by ExchangePlans (optimal, cgm, ac): every process's
// transposed column must equal the sequential transpose entry for entry.

#include <switchyard/primitives/sparse_transpose.hpp>
#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <tuple>

#include "test_support.hpp"

namespace {

using namespace switchyard;
namespace prim = switchyard::primitives;

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

// Transposes a with `options` on a.size() processes, twice (the second run
// reuses the workspace and the result's capacity), checking every entry.
void transpose_and_check(const prim::CommMatrix& a, const prim::SparseTransposeOptions& options) {
  const prim::SparseTransposer t(a, options);
  std::atomic<Rank> checked{0};
  runtime().run(a.size(), [&](Process& p) -> Task<void> {
    const Communicator c = p.world();
    const std::vector<prim::MatrixEntry> column = a.column(c.rank());
    const std::vector<prim::MatrixEntry> want = prim::transposed_column(a, c.rank());
    prim::Workspace ws;
    std::vector<prim::MatrixEntry> got;
    for (int repeat = 0; repeat < 2; ++repeat) {
      co_await t.run(c, column, got, ws);
      SY_CHECK(got == want, prim::to_string(options.method)
                                << " " << options.scheduler << ": column " << c.rank() << " has " << got.size()
                                << " entries, want " << want.size());
    }
    checked.fetch_add(1);
  });
  EXPECT_EQ(checked.load(), a.size());
}

class SparseTranspose : public ::testing::TestWithParam<std::tuple<Rank, Rank, Rank, double>> {};

TEST_P(SparseTranspose, EveryMethodIsElementExact) {
  const auto [n, m1, m2, scattered] = GetParam();
  const prim::CommMatrix generated = prim::dense_lines_matrix(n, m1, m2, scattered, 7 * n + m1 + m2);
  std::stringstream text;
  schedulers::write_matrix_market(text, generated);
  const prim::CommMatrix a = schedulers::read_matrix_market(text, "generated");
  ASSERT_EQ(a, generated);
  const prim::SparseTransposer structure(a);
  EXPECT_EQ(structure.dense_columns().size(), m1 == n || m2 == n ? n : m1) << "dense columns found";
  EXPECT_EQ(structure.dense_rows().size(), m1 == n || m2 == n ? n : m2) << "dense rows found";
  EXPECT_EQ(structure.scattered_entries() > 0, scattered > 0 && m1 < n && m2 < n && n > 2);
  prim::SparseTransposeOptions options;
  for (prim::TransposeMethod m : {prim::TransposeMethod::kPmnsPmng, prim::TransposeMethod::kTotalExchange}) {
    options.method = m;
    transpose_and_check(a, options);
  }
  options.method = prim::TransposeMethod::kExchangePlan;
  for (const char* scheduler : {"optimal", "cgm", "ac"}) {
    options.scheduler = scheduler;
    transpose_and_check(a, options);
  }
}

INSTANTIATE_TEST_SUITE_P(Matrices, SparseTranspose,
                         ::testing::Values(std::make_tuple(Rank{1}, Rank{1}, Rank{0}, 0.0),
                                           std::make_tuple(Rank{5}, Rank{1}, Rank{1}, 0.0),
                                           std::make_tuple(Rank{16}, Rank{3}, Rank{2}, 0.0),
                                           std::make_tuple(Rank{16}, Rank{0}, Rank{4}, 0.1),
                                           std::make_tuple(Rank{33}, Rank{5}, Rank{0}, 0.05),
                                           std::make_tuple(Rank{33}, Rank{2}, Rank{7}, 0.05),
                                           std::make_tuple(Rank{64}, Rank{4}, Rank{4}, 0.02),
                                           std::make_tuple(Rank{12}, Rank{12}, Rank{0}, 0.0),
                                           std::make_tuple(Rank{20}, Rank{0}, Rank{0}, 0.2)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_cols" +
                                  std::to_string(std::get<1>(info.param)) + "_rows" +
                                  std::to_string(std::get<2>(info.param)) + "_scattered" +
                                  std::to_string(static_cast<int>(std::get<3>(info.param) * 100));
                         });

TEST(SparseTransposeArguments, BadMatricesAreRefused) {
  EXPECT_THROW(prim::dense_lines_matrix(0, 0, 0, 0, 1), InvalidArgument);
  EXPECT_THROW(prim::dense_lines_matrix(4, 5, 0, 0, 1), InvalidArgument);
  EXPECT_THROW(prim::dense_lines_matrix(4, 1, 0, 1.0, 1), InvalidArgument);
  const prim::SparseTransposer t(prim::dense_lines_matrix(4, 1, 1, 0, 1));
  EXPECT_THROW(runtime().run(3,
                             [&](Process& p) -> Task<void> {
                               prim::Workspace ws;
                               std::vector<prim::MatrixEntry> got;
                               co_await t.run(p.world(), {}, got, ws);
                             }),
               InvalidArgument);
}

}  // namespace
