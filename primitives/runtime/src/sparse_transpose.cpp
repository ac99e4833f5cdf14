// Sparse transposition three ways: PMNS + PMNG (+ direct messages for the
// scattered entries), a total exchange, and an ExchangePlan of the nonzeros.

#include "switchyard/primitives/sparse_transpose.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "pending.hpp"
#include "switchyard/primitives/multinode.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::primitives {
namespace {

constexpr std::size_t kValue = sizeof(std::uint64_t);  // one matrix value on the wire

std::uint64_t value_at(std::uint64_t seed, Rank i, Rank j) {
  return splitmix64_finalize(seed ^ (std::uint64_t{i} << 32 | j)) % 1'000'000'000 + 1;
}

// The value of row `row` in a column sorted by row, or 0.
std::uint64_t lookup(std::span<const MatrixEntry> column, Rank row) {
  const auto it =
      std::lower_bound(column.begin(), column.end(), row, [](const MatrixEntry& e, Rank r) { return e.peer < r; });
  return it != column.end() && it->peer == row ? it->bytes : 0;
}

std::uint64_t word(const std::byte* p) {
  std::uint64_t v;
  std::memcpy(&v, p, kValue);
  return v;
}

// Scratch regions carved out of one Workspace call, each 64-byte aligned.
class Carver {
 public:
  Carver(Workspace& ws, std::initializer_list<std::size_t> sizes) {
    std::size_t total = 0;
    for (std::size_t s : sizes) total += (s + 63) / 64 * 64;
    std::byte* p = ws.bytes(total).data();
    for (std::size_t s : sizes) {
      regions_[count_++] = {p, s};
      p += (s + 63) / 64 * 64;
    }
  }
  std::span<std::byte> operator[](std::size_t i) const { return regions_[i]; }

 private:
  std::array<std::span<std::byte>, 4> regions_{};
  std::size_t count_ = 0;
};

}  // namespace

const char* to_string(TransposeMethod m) noexcept {
  switch (m) {
    case TransposeMethod::kPmnsPmng:
      return "pmns+pmng";
    case TransposeMethod::kTotalExchange:
      return "te";
    case TransposeMethod::kExchangePlan:
      return "exchange-plan";
  }
  return "?";
}

CommMatrix dense_lines_matrix(Rank n, Rank dense_columns, Rank dense_rows, double scattered, std::uint64_t seed) {
  if (n == 0 || n > schedulers::kMaxMatrixProcesses) {
    throw InvalidArgument("dense_lines_matrix: n = " + std::to_string(n) + " is not in [1, " +
                          std::to_string(schedulers::kMaxMatrixProcesses) + "]");
  }
  if (dense_columns > n || dense_rows > n) {
    throw InvalidArgument("dense_lines_matrix: " + std::to_string(dense_columns) + " dense columns and " +
                          std::to_string(dense_rows) + " dense rows do not fit in " + std::to_string(n));
  }
  if (!(scattered >= 0 && scattered < 1)) {
    throw InvalidArgument("dense_lines_matrix: the scattered density " + std::to_string(scattered) +
                          " is not in [0, 1)");
  }
  std::mt19937_64 rng(seed);
  std::vector<Rank> columns(n), rows(n);
  std::iota(columns.begin(), columns.end(), Rank{0});
  std::iota(rows.begin(), rows.end(), Rank{0});
  std::shuffle(columns.begin(), columns.end(), rng);
  std::shuffle(rows.begin(), rows.end(), rng);
  std::vector<char> dense_column(n, 0), dense_row(n, 0);
  for (Rank k = 0; k < dense_columns; ++k) dense_column[columns[k]] = 1;
  for (Rank k = 0; k < dense_rows; ++k) dense_row[rows[k]] = 1;
  CommMatrix a(n);
  std::bernoulli_distribution other(scattered);
  for (Rank i = 0; i < n; ++i) {
    for (Rank j = 0; j < n; ++j) {
      if (dense_column[j] || dense_row[i] || (scattered > 0 && other(rng))) a.set(i, j, value_at(seed, i, j));
    }
  }
  return a;
}

std::vector<MatrixEntry> transposed_column(const CommMatrix& a, Rank j) {
  const auto row = a.row(j);
  return {row.begin(), row.end()};
}

SparseTransposer::SparseTransposer(const CommMatrix& a, SparseTransposeOptions options)
    : n_(a.size()), options_(std::move(options)), scattered_to_(n_), scattered_from_(n_) {
  std::vector<Rank> in_column(n_, 0);
  for (Rank i = 0; i < n_; ++i) {
    if (a.row(i).size() == n_) dense_rows_.push_back(i);
    for (const MatrixEntry& e : a.row(i)) ++in_column[e.peer];
  }
  for (Rank j = 0; j < n_; ++j) {
    if (in_column[j] == n_) dense_columns_.push_back(j);
  }
  CommMatrix nonzeros(n_);
  for (Rank i = 0; i < n_; ++i) {
    const bool row_dense = std::binary_search(dense_rows_.begin(), dense_rows_.end(), i);
    for (const MatrixEntry& e : a.row(i)) {
      if (e.peer != i) nonzeros.set(e.peer, i, kValue);
      if (row_dense || std::binary_search(dense_columns_.begin(), dense_columns_.end(), e.peer)) continue;
      scattered_to_[e.peer].push_back(i);
      scattered_from_[i].push_back(e.peer);
      ++scattered_;
    }
  }
  if (options_.method == TransposeMethod::kExchangePlan) {
    schedulers::ExchangePlanOptions plan_options;
    plan_options.scheduler = options_.scheduler;
    plan_ = std::make_unique<schedulers::ExchangePlan>(nonzeros, plan_options);
  }
}

SparseTransposer::~SparseTransposer() = default;
SparseTransposer::SparseTransposer(SparseTransposer&&) noexcept = default;

Task<void> SparseTransposer::run(Communicator comm, std::span<const MatrixEntry> column,
                                 std::vector<MatrixEntry>& transposed, Workspace& workspace) const {
  if (comm.size() != n_) {
    detail::invalid("sparse transpose", "the matrix has " + std::to_string(n_) + " columns, the communicator " +
                                            std::to_string(comm.size()) + " members");
  }
  transposed.clear();
  switch (options_.method) {
    case TransposeMethod::kPmnsPmng:
      co_await run_partial(comm, column, transposed, workspace);
      break;
    case TransposeMethod::kTotalExchange:
      co_await run_total(comm, column, transposed, workspace);
      break;
    case TransposeMethod::kExchangePlan:
      co_await run_plan(comm, column, transposed, workspace);
      break;
  }
}

Task<void> SparseTransposer::run_partial(Communicator comm, std::span<const MatrixEntry> column,
                                         std::vector<MatrixEntry>& transposed, Workspace& workspace) const {
  const Rank me = comm.rank();
  const bool my_column_dense = std::binary_search(dense_columns_.begin(), dense_columns_.end(), me);
  const bool my_row_dense = std::binary_search(dense_rows_.begin(), dense_rows_.end(), me);
  const auto& to = scattered_to_[me];
  const auto& from = scattered_from_[me];
  const Carver space(workspace, {(my_column_dense ? n_ : 0) * kValue, dense_columns_.size() * kValue,
                                 std::max<std::size_t>(dense_rows_.size() + to.size(), my_row_dense ? n_ : 0) * kValue,
                                 std::max<std::size_t>(n_, from.size()) * kValue});
  const auto pack = [](std::span<std::byte> out, std::size_t k, std::uint64_t v) {
    std::memcpy(out.data() + k * kValue, &v, kValue);
  };
  if (!dense_columns_.empty()) {  // PMNS: dense column j scatters A(i, j) to every i
    const auto send = space[0];
    for (std::size_t i = 0; my_column_dense && i < n_; ++i) pack(send, i, column[i].bytes);
    co_await pmns(comm, dense_columns_, send, space[1], options_.calls);
  }
  const auto out = space[2];
  const auto in = space[3];
  if (!dense_rows_.empty()) {  // PMNG: dense row i gathers A(i, j) from every j
    for (std::size_t k = 0; k < dense_rows_.size(); ++k) pack(out, k, lookup(column, dense_rows_[k]));
    co_await pmng(comm, dense_rows_, out.first(dense_rows_.size() * kValue), my_row_dense ? in : std::span<std::byte>{},
                  options_.calls);
  }
  // Scattered entries: one message each (tag 0 of the library's communicator, after the tasks').
  // A dense row's process receives none (its row came with the PMNG) but may send some.
  const Communicator c = comm.library(kPrimitivesLibrary);
  detail::Pending pending(c, to.size(), from.size(), "sparse transpose");
  const auto scattered_out = out.subspan(dense_rows_.size() * kValue);
  for (std::size_t k = 0; k < to.size(); ++k) {
    pack(scattered_out, k, lookup(column, to[k]));
    if (to[k] != me) pending.send(to[k], scattered_out.subspan(k * kValue, kValue));
  }
  for (std::size_t k = 0; k < from.size(); ++k) {
    if (from[k] == me) {
      pack(in, k, lookup(column, me));
    } else {
      pending.receive(from[k], in.subspan(k * kValue, kValue));
    }
  }
  co_await pending.wait();
  if (my_row_dense) {  // every entry of row me came with the PMNG
    for (Rank j = 0; j < n_; ++j) transposed.push_back({j, word(in.data() + j * kValue)});
    co_return;
  }
  // Merge the dense columns' values and the scattered ones, both sorted by column.
  std::size_t d = 0, s = 0;
  while (d < dense_columns_.size() || s < from.size()) {
    if (s == from.size() || (d < dense_columns_.size() && dense_columns_[d] < from[s])) {
      transposed.push_back({dense_columns_[d], word(space[1].data() + d * kValue)});
      ++d;
    } else {
      transposed.push_back({from[s], word(in.data() + s * kValue)});
      ++s;
    }
  }
}

Task<void> SparseTransposer::run_total(Communicator comm, std::span<const MatrixEntry> column,
                                       std::vector<MatrixEntry>& transposed, Workspace& workspace) const {
  const Carver space(workspace, {n_ * kValue, n_ * kValue});
  std::memset(space[0].data(), 0, n_ * kValue);
  for (const MatrixEntry& e : column) std::memcpy(space[0].data() + e.peer * kValue, &e.bytes, kValue);
  co_await te(comm, space[0], space[1], options_.calls);
  for (Rank j = 0; j < n_; ++j) {
    if (const std::uint64_t v = word(space[1].data() + j * kValue); v != 0) transposed.push_back({j, v});
  }
}

Task<void> SparseTransposer::run_plan(Communicator comm, std::span<const MatrixEntry> column,
                                      std::vector<MatrixEntry>& transposed, Workspace& workspace) const {
  const Rank me = comm.rank();
  const Carver space(workspace, {n_ * kValue, n_ * kValue, n_ * sizeof(std::uint64_t)});
  const auto displacements = std::span(reinterpret_cast<std::uint64_t*>(space[2].data()), n_);
  for (Rank q = 0; q < n_; ++q) displacements[q] = q * kValue;
  for (const MatrixEntry& e : column) std::memcpy(space[0].data() + e.peer * kValue, &e.bytes, kValue);
  co_await plan_->run(comm, space[0], displacements, space[1], displacements);
  const std::uint64_t own = lookup(column, me);
  bool placed_own = own == 0;
  for (const MatrixEntry& source : plan_->receives(me)) {
    if (!placed_own && source.peer > me) transposed.push_back({me, own}), placed_own = true;
    transposed.push_back({source.peer, word(space[1].data() + source.peer * kValue)});
  }
  if (!placed_own) transposed.push_back({me, own});
}

}  // namespace switchyard::primitives
