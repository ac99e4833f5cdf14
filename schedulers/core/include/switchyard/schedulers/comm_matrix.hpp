#pragma once
/// @file
/// The communication matrix COM of the papers: entry (i, j) is the number of
/// bytes process i sends to process j (0: no message). Sparse, by rows: an
/// all-to-many exchange touches d << n entries per row.

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "switchyard/types.hpp"

namespace switchyard::schedulers {

/// One message of a row (or a column) of a CommMatrix: its peer and its size.
struct MatrixEntry {
  Rank peer = 0;  ///< destination (in a row) or source (in a column)
  std::uint64_t bytes = 0;  ///< > 0
  bool operator==(const MatrixEntry&) const = default;  ///< CommMatrix's defaulted == needs it
};

/// Far beyond any job the runtime runs (tested to 4096), and it keeps a hostile
/// file header from asking for terabytes of empty rows.
inline constexpr Rank kMaxMatrixProcesses = Rank{1} << 22;
/// The most bytes a row, a column or the whole matrix may hold: every sum the
/// schedulers and buffer layouts form (offsets, loads, makespans) stays below
/// 2^63, so none of them can wrap.
inline constexpr std::uint64_t kMaxMatrixBytes = (std::uint64_t{1} << 63) - 1;

/// COM (see the file's description): n x n, stored as sparse rows with the
/// byte sums of every row and column kept alongside.
class CommMatrix {
 public:
  CommMatrix() = default;  ///< no processes
  /// `processes` x `processes`, empty. Throws InvalidArgument beyond kMaxMatrixProcesses.
  explicit CommMatrix(Rank processes);

  Rank size() const noexcept { return static_cast<Rank>(rows_.size()); }  ///< n, the processes
  /// Sets entry (src, dst); bytes == 0 removes it. Throws InvalidArgument on a
  /// bad rank, or when row src, column dst or the total would exceed kMaxMatrixBytes.
  void set(Rank src, Rank dst, std::uint64_t bytes);
  /// Bytes src sends to dst, 0 if none. Throws InvalidArgument on a bad rank.
  std::uint64_t at(Rank src, Rank dst) const;
  /// Which sum setting (src, dst) to `bytes` would take beyond kMaxMatrixBytes
  /// ("its row's sum", "its column's sum", "the matrix's total"), or nullptr.
  const char* overflowing_sum(Rank src, Rank dst, std::uint64_t bytes) const;
  /// Row src: its messages, sorted by destination.
  std::span<const MatrixEntry> row(Rank src) const { return rows_.at(src); }
  /// Column dst: its messages, sorted by source (computed on demand).
  std::vector<MatrixEntry> column(Rank dst) const;

  std::uint64_t messages() const noexcept;  ///< non-zero entries
  std::uint64_t total_bytes() const noexcept { return total_bytes_; }  ///< the sum of every entry
  std::uint64_t row_bytes(Rank src) const { return row_bytes_.at(src); }  ///< bytes src sends in all
  std::uint64_t column_bytes(Rank dst) const { return column_bytes_.at(dst); }  ///< bytes dst receives in all
  /// Δ: the most messages any process sends or receives (König's lower bound on phases).
  std::uint64_t max_degree() const;
  /// The most bytes any process sends or receives (lower bound on a preemptive makespan).
  std::uint64_t max_load_bytes() const;
  bool operator==(const CommMatrix&) const = default;  ///< same size and entries

 private:
  std::vector<std::vector<MatrixEntry>> rows_;
  /// Kept with every set(), so that a sum that would not fit is refused there.
  std::vector<std::uint64_t> row_bytes_, column_bytes_;
  std::uint64_t total_bytes_ = 0;
};

/// The generator of Ranka-Wang-Fox Fig. 7: d entries per row and per column
/// (COM(j, (i + j) mod n) for i < d), then rows and columns randomly permuted.
/// Every message has `bytes` bytes. Requires d <= n.
CommMatrix fig7_matrix(Rank n, Rank d, std::uint64_t bytes, std::uint64_t seed);

/// Wang-Lin-Ranka test set 2: the Fig. 7 pattern with non-uniform sizes,
/// unit * k bytes with k drawn uniformly from 1..32.
CommMatrix nonuniform_matrix(Rank n, Rank d, std::uint64_t unit, std::uint64_t seed);

/// Matrix Market coordinate format: `%%MatrixMarket matrix coordinate integer general`,
/// then "rows cols entries", then one "row col bytes" line per entry, 1-based.
/// Errors throw InvalidArgument naming `source` and the line number, as does a
/// header announcing more entries than the machine allows memory for (machine_memory.hpp).
CommMatrix read_matrix_market(std::istream& in, const std::string& source);
/// read_matrix_market from the file at `path`; InvalidArgument if it cannot be opened.
CommMatrix read_matrix_market_file(const std::string& path);
/// `m` in the format read_matrix_market reads, entries in row order. Throws
/// InvalidArgument for a matrix of no processes, which no reader accepts.
void write_matrix_market(std::ostream& out, const CommMatrix& m);

}  // namespace switchyard::schedulers
