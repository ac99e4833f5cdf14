#pragma once
// A sparse matrix in compressed sparse row (CSR) form, and the reader of
// Matrix Market coordinate files into one: any field (real, integer, complex,
// pattern) and any symmetry (general, symmetric, skew-symmetric, hermitian),
// the stored triangle mirrored into the full matrix.
//
//   const auto a = read_csr_matrix_market_file<double>("lund_a.mtx");
//   for (std::uint64_t i = 0; i < a.rows; ++i)
//     for (std::uint64_t k = a.row_start[i]; k < a.row_start[i + 1]; ++k) y[i] += a.value[k] * x[a.column[k]];
//
// The reader keeps the limits and the messages of the communication matrix's
// (switchyard/matrix_market_lines.hpp): lines of at most 1024 characters,
// errors "source:line: what" echoing what was read printably, an entry given
// twice refused, the announced count of entries checked. What the announced
// size would take (csr_read_bytes) is refused up front beyond the machine's
// memory (switchyard/machine_memory.hpp); beyond that, memory grows only with
// the entries actually read.

#include <complex>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace switchyard::halo {

/// Column indices are 32 bits (what the products read); dimensions stay below that.
using ColumnIndex = std::uint32_t;
inline constexpr std::uint64_t kMaxSparseDimension = 0xffffffffull;  ///< rows or columns
/// Entries after mirroring: 2^31, where a CSR of doubles takes 24 GiB.
inline constexpr std::uint64_t kMaxSparseEntries = std::uint64_t{1} << 31;

template <class T>
/// A sparse matrix in compressed sparse row form, entries of type T.
struct CsrMatrix {
  /// The number of rows.
  std::uint64_t rows = 0, columns = 0;  ///< the number of columns
  /// Row i's entries are [row_start[i], row_start[i + 1]) of column and value,
  /// each column at most once; ascending as read from a file (a local matrix,
  /// HaloExchange::local_rows, keeps its global matrix's order).
  std::vector<std::uint64_t> row_start{0};
  std::vector<ColumnIndex> column;  ///< each entry's column, row after row
  std::vector<T> value;  ///< each entry's value, beside its column

  std::uint64_t nonzeros() const noexcept { return column.size(); }  ///< stored entries
  std::span<const ColumnIndex> row_columns(std::uint64_t i) const {  ///< row i's columns
    return std::span(column).subspan(row_start[i], row_start[i + 1] - row_start[i]);
  }
  std::span<const T> row_values(std::uint64_t i) const {  ///< row i's values, in the order of its columns
    return std::span(value).subspan(row_start[i], row_start[i + 1] - row_start[i]);
  }
  bool operator==(const CsrMatrix&) const = default;  ///< the same dimensions and entries, in the same order
};

/// What a Matrix Market header says: "%%MatrixMarket matrix coordinate FIELD SYMMETRY".
enum class MatrixField { real, integer, complex, pattern };
/// The header's symmetry word: which entries the file stores.
enum class MatrixSymmetry { general, symmetric, skew_symmetric, hermitian };
/// The field and symmetry a header announces.
struct MatrixMarketHeader {
  MatrixField field = MatrixField::real;  ///< what the entries hold
  MatrixSymmetry symmetry = MatrixSymmetry::general;  ///< which triangle is stored and how it mirrors
};
/// The header's words, as the file writes them ("real", "skew-symmetric").
const char* field_name(MatrixField f) noexcept;
const char* symmetry_name(MatrixSymmetry s) noexcept;  ///< "general", "symmetric", "skew-symmetric", "hermitian"

/// What a file's header and size lines announce, checked as the reader checks
/// them (its entries unread): for a caller that estimates what it will build
/// of the matrix before reading it. InvalidArgument "source:line: what".
struct MatrixMarketSize {
  /// The rows the size line announces.
  std::uint64_t rows = 0, columns = 0, entries = 0;  ///< the entries it announces (stored, before mirroring)
  /** @var MatrixMarketSize::columns
      The columns the size line announces. */
  MatrixMarketHeader header;  ///< the header line's field and symmetry
  /// Entries once the stored triangle is mirrored, at most.
  std::uint64_t stored_entries() const noexcept {
    return header.symmetry == MatrixSymmetry::general ? entries : 2 * entries;
  }
};
/// The size of the Matrix Market stream `in`, named `source` in errors.
MatrixMarketSize read_matrix_market_size(std::istream& in, const std::string& source);
/// The size of the Matrix Market file at `path`.
MatrixMarketSize read_matrix_market_size_file(const std::string& path);

/// Bytes the reader takes for a file of this size, at most: row_start, and
/// each entry as read (row, column, line and value; twice while its vector
/// grows), then its column and value in the CSR.
template <class T>
double csr_read_bytes(const MatrixMarketSize& size) {
  constexpr double kEntryAsRead = 3 * sizeof(std::uint64_t) + sizeof(T);
  return sizeof(std::uint64_t) * (static_cast<double>(size.rows) + 1) +
         static_cast<double>(size.stored_entries()) * (2 * kEntryAsRead + sizeof(ColumnIndex) + sizeof(T));
}

/// Reads a coordinate Matrix Market file into CSR, the stored triangle of a
/// symmetric, skew-symmetric or hermitian matrix mirrored (negated, conjugated).
/// T is double or std::complex<double>: a pattern's entries are 1, an
/// integer's must be exact in a double, and a complex file needs
/// std::complex<double>. Errors throw InvalidArgument naming `source` and the
/// line, a size beyond the machine's memory (csr_read_bytes) among them.
template <class T>
CsrMatrix<T> read_csr_matrix_market(std::istream& in, const std::string& source);
template <class T>
/// read_csr_matrix_market() of the file at `path`.
CsrMatrix<T> read_csr_matrix_market_file(const std::string& path);

/// Compiled once, in the library: T = double.
extern template CsrMatrix<double> read_csr_matrix_market<double>(std::istream&, const std::string&);
/// Compiled once, in the library: T = `std::complex<double>`.
extern template CsrMatrix<std::complex<double>> read_csr_matrix_market<std::complex<double>>(std::istream&,
                                                                                             const std::string&);
/// Compiled once, in the library: T = double.
extern template CsrMatrix<double> read_csr_matrix_market_file<double>(const std::string&);
/// Compiled once, in the library: T = `std::complex<double>`.
extern template CsrMatrix<std::complex<double>> read_csr_matrix_market_file<std::complex<double>>(const std::string&);

}  // namespace switchyard::halo
