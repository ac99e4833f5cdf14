#pragma once
// Transposition of a sparse matrix stored by columns (Varvarigos section 3.2,
// Fig. 3): process j holds column j of an N x N matrix A with M1 dense columns
// and M2 dense rows at arbitrary positions (and, optionally, scattered
// nonzeros). Transposing moves entry (i, j) from process j to process i:
//   - the dense columns are a PMNS (M1 senders scatter a value to everyone),
//   - the dense rows a PMNG (M2 gatherers collect a value from everyone),
//   - scattered entries go one message each, straight to their process.
// For comparison the same transposition runs as a total exchange (the dense
// method: every process sends every other one a value, zero for none) or as
// an all-to-many exchange of exactly the nonzeros (ExchangePlan with any of
// the schedulers' algorithms).
//
// Matrices are CommMatrix objects (schedulers/comm_matrix.hpp) holding the
// values: entry (i, j) = a.at(i, j) > 0, which gives the Matrix Market reader
// and writer of the schedulers; a column or a transposed column is a list of
// MatrixEntry{peer = the other index, bytes = the value}, sorted by index.
//
//   const SparseTransposer t(a, SparseTransposeOptions{});  // once, from the structure
//   co_await t.run(comm, a_column_j, transposed_j, workspace); // in each process j

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "switchyard/communicator.hpp"
#include "switchyard/primitives/call_options.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/task.hpp"

namespace switchyard::primitives {

using schedulers::CommMatrix;
using schedulers::MatrixEntry;

/// An n x n matrix with `dense_columns` full columns and `dense_rows` full rows
/// at random positions, plus each other entry nonzero with probability
/// `scattered` (kept below one so that no other line fills up), values in
/// [1, 10^9]. Deterministic in `seed`.
CommMatrix dense_lines_matrix(Rank n, Rank dense_columns, Rank dense_rows, double scattered, std::uint64_t seed);

/// The sequential reference: row j of a as column j of the transpose.
std::vector<MatrixEntry> transposed_column(const CommMatrix& a, Rank j);

/// How the transposition moves the entries.
enum class TransposeMethod {
  kPmnsPmng,  ///< the paper's: PMNS for the dense columns, PMNG for the dense rows, scattered entries directly
  kTotalExchange,  ///< TE of one 8-byte value per pair (zero: none)
  kExchangePlan,  ///< an ExchangePlan of the nonzeros with options.scheduler
};
const char* to_string(TransposeMethod m) noexcept;  ///< the method's name, for reports

/// How a SparseTransposer transposes.
struct SparseTransposeOptions {
  TransposeMethod method = TransposeMethod::kPmnsPmng;  ///< the paper's, the dense TE or an ExchangePlan
  std::string scheduler = "optimal";  ///< kExchangePlan only: the schedulers' algorithm
  CallOptions calls{};  ///< the tasks' algorithms (a workspace here must not be run()'s)
};

/// The transposition of one matrix structure, planned once and run by every process (see the file's description).
class SparseTransposer {
 public:
  /// From the whole matrix's structure, which every process knows (the
  /// positions of its dense lines, and of the scattered entries). A line is
  /// dense when it holds n nonzeros.
  explicit SparseTransposer(const CommMatrix& a, SparseTransposeOptions options = {});
  ~SparseTransposer();  ///< frees the plan
  SparseTransposer(SparseTransposer&&) noexcept;  ///< takes over the other transposer's plan

  /// The dense columns' indices, increasing.
  std::span<const Rank> dense_columns() const noexcept { return dense_columns_; }
  std::span<const Rank> dense_rows() const noexcept { return dense_rows_; }  ///< the dense rows' indices, increasing
  std::uint64_t scattered_entries() const noexcept { return scattered_; }  ///< nonzeros outside the dense lines
  const SparseTransposeOptions& options() const noexcept { return options_; }  ///< as given

  /// Collective over comm (comm.size() == n): member j passes column j of A and
  /// gets column j of A's transpose (row j of A), sorted by index; `transposed`
  /// keeps its capacity between calls.
  Task<void> run(Communicator comm, std::span<const MatrixEntry> column, std::vector<MatrixEntry>& transposed,
                 Workspace& workspace) const;

 private:
  Task<void> run_partial(Communicator comm, std::span<const MatrixEntry> column, std::vector<MatrixEntry>& transposed,
                         Workspace& workspace) const;
  Task<void> run_total(Communicator comm, std::span<const MatrixEntry> column, std::vector<MatrixEntry>& transposed,
                       Workspace& workspace) const;
  Task<void> run_plan(Communicator comm, std::span<const MatrixEntry> column, std::vector<MatrixEntry>& transposed,
                      Workspace& workspace) const;

  Rank n_ = 0;
  SparseTransposeOptions options_;
  std::vector<Rank> dense_columns_, dense_rows_;
  std::uint64_t scattered_ = 0;
  /// Scattered entries (i, j) outside the dense lines: rows i of column j (sent
  /// by j), and columns j of row i (received by i), per process.
  std::vector<std::vector<Rank>> scattered_to_, scattered_from_;
  std::unique_ptr<schedulers::ExchangePlan> plan_;  ///< kExchangePlan
};

}  // namespace switchyard::primitives
