#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <numeric>
#include <type_traits>

#include "switchyard/errors.hpp"
#include "switchyard/halo/csr_matrix.hpp"
#include "switchyard/machine_memory.hpp"
#include "switchyard/matrix_market_lines.hpp"

namespace switchyard::halo {

const char* field_name(MatrixField f) noexcept {
  switch (f) {
    case MatrixField::real:
      return "real";
    case MatrixField::integer:
      return "integer";
    case MatrixField::complex:
      return "complex";
    case MatrixField::pattern:
      return "pattern";
  }
  return "?";
}

const char* symmetry_name(MatrixSymmetry s) noexcept {
  switch (s) {
    case MatrixSymmetry::general:
      return "general";
    case MatrixSymmetry::symmetric:
      return "symmetric";
    case MatrixSymmetry::skew_symmetric:
      return "skew-symmetric";
    case MatrixSymmetry::hermitian:
      return "hermitian";
  }
  return "?";
}

namespace {

constexpr const char* kExpectedHeader =
    "expected '%%MatrixMarket matrix coordinate real|integer|complex|pattern "
    "general|symmetric|skew-symmetric|hermitian'";

template <class T>
constexpr bool kComplex = !std::is_same_v<T, double>;

// The header line, checked: a coordinate matrix, a field and symmetry the
// format allows together (skew-symmetric has no pattern, hermitian is complex),
// a field that the caller's values hold (`complex_ok`).
MatrixMarketHeader read_header(const MatrixMarketLines& lines, bool complex_ok) {
  auto h = lines.tokens();
  for (auto& t : h) std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  MatrixMarketHeader header;
  bool known_field = false, known_symmetry = false;
  if (h.size() == 5) {
    for (auto f : {MatrixField::real, MatrixField::integer, MatrixField::complex, MatrixField::pattern}) {
      if (h[3] == field_name(f)) header.field = f, known_field = true;
    }
    for (auto s : {MatrixSymmetry::general, MatrixSymmetry::symmetric, MatrixSymmetry::skew_symmetric,
                   MatrixSymmetry::hermitian}) {
      if (h[4] == symmetry_name(s)) header.symmetry = s, known_symmetry = true;
    }
  }
  if (h.size() != 5 || h[0] != "%%matrixmarket" || h[1] != "matrix" || h[2] != "coordinate" || !known_field ||
      !known_symmetry) {
    lines.fail(std::string(kExpectedHeader) + ", found '" + printable(lines.text()) + "'");
  }
  if (header.symmetry == MatrixSymmetry::skew_symmetric && header.field == MatrixField::pattern) {
    lines.fail("a pattern matrix cannot be skew-symmetric: its entries have no sign");
  }
  if (header.symmetry == MatrixSymmetry::hermitian && header.field != MatrixField::complex) {
    lines.fail(std::string("a hermitian matrix is complex, this one is ") + field_name(header.field) +
               " (a real one is symmetric)");
  }
  if (header.field == MatrixField::complex && !complex_ok) {
    lines.fail("a complex matrix: read it as CsrMatrix<std::complex<double>>");
  }
  return header;
}

// One coordinate entry as read: its place, its value, the line it came from.
template <class T>
struct Entry {
  std::uint64_t row, column;
  T value;
  std::uint64_t line;
};

double parse_real(const MatrixMarketLines& lines, const std::string& token, const std::string& where) {
  double v = 0;
  const auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || p != token.data() + token.size() || !std::isfinite(v)) {
    lines.fail("value '" + printable(token) + "' of entry " + where + " is not a finite number");
  }
  return v;
}

template <class T>
T parse_value(const MatrixMarketLines& lines, const MatrixMarketHeader& h, const std::vector<std::string>& t,
              const std::string& where) {
  switch (h.field) {
    case MatrixField::pattern:
      return T(1);
    case MatrixField::integer: {
      const bool negative = !t[2].empty() && t[2][0] == '-';
      const std::uint64_t magnitude = lines.number(negative ? t[2].substr(1) : t[2], "integer value");
      // Exact in a double: up to 2^53.
      if (magnitude > (std::uint64_t{1} << 53)) {
        lines.fail("integer value " + t[2] + " of entry " + where + " is beyond 2^53, not exact in a double");
      }
      const auto v = static_cast<double>(magnitude);
      return T(negative ? -v : v);
    }
    case MatrixField::real:
      return T(parse_real(lines, t[2], where));
    case MatrixField::complex:
      if constexpr (kComplex<T>) return T(parse_real(lines, t[2], where), parse_real(lines, t[3], where));
      break;
  }
  return T(0);
}

// The entries of the file's lines after the size line, checked one by one.
template <class T>
std::vector<Entry<T>> read_entries(MatrixMarketLines& lines, const MatrixMarketHeader& h, std::uint64_t rows,
                                   std::uint64_t cols, std::uint64_t entries) {
  const std::size_t tokens = h.field == MatrixField::pattern ? 2 : h.field == MatrixField::complex ? 4 : 3;
  const char* shape = h.field == MatrixField::pattern   ? "'row column'"
                      : h.field == MatrixField::complex ? "'row column real imaginary'"
                                                        : "'row column value'";
  std::vector<Entry<T>> out;
  out.reserve(std::min<std::uint64_t>(entries, 1 << 20));  // what a header announces is not trusted further
  for (auto t = lines.next_data(); !t.empty(); t = lines.next_data()) {
    if (t.size() != tokens) lines.fail(std::string("expected ") + shape + ", found '" + printable(lines.text()) + "'");
    const std::uint64_t r = lines.number(t[0], "row");
    const std::uint64_t c = lines.number(t[1], "column");
    if (r < 1 || r > rows) lines.fail("row " + t[0] + " is outside 1.." + std::to_string(rows));
    if (c < 1 || c > cols) lines.fail("column " + t[1] + " is outside 1.." + std::to_string(cols));
    if (out.size() == entries) lines.fail("more entries than the " + std::to_string(entries) + " announced");
    const std::string where = "(" + t[0] + ", " + t[1] + ")";
    const T v = parse_value<T>(lines, h, t, where);
    if (r == c && h.symmetry == MatrixSymmetry::skew_symmetric) {
      lines.fail("entry " + where + " is on the diagonal, which a skew-symmetric matrix has zero and does not store");
    }
    if constexpr (kComplex<T>) {
      if (r == c && h.symmetry == MatrixSymmetry::hermitian && v.imag() != 0) {
        lines.fail("entry " + where + " is on the diagonal of a hermitian matrix, which is real");
      }
    }
    out.push_back({r - 1, c - 1, v, lines.line()});
  }
  if (out.size() != entries) {
    lines.fail("the header announces " + std::to_string(entries) + " entries, the file has " +
               std::to_string(out.size()));
  }
  return out;
}

// The other triangle of a symmetric kind: (j, i) for every (i, j) off the diagonal.
template <class T>
void mirror(std::vector<Entry<T>>& entries, MatrixSymmetry symmetry) {
  if (symmetry == MatrixSymmetry::general) return;
  const std::size_t stored = entries.size();
  for (std::size_t k = 0; k < stored; ++k) {
    const Entry<T> e = entries[k];
    if (e.row == e.column) continue;
    T v = e.value;
    if (symmetry == MatrixSymmetry::skew_symmetric) v = -v;
    if constexpr (kComplex<T>) {
      if (symmetry == MatrixSymmetry::hermitian) v = std::conj(v);
    }
    entries.push_back({e.column, e.row, v, e.line});
  }
}

// Sorted by (row, column) into CSR; an entry given twice (or in both
// triangles of a symmetric kind) is refused with both lines.
template <class T>
CsrMatrix<T> to_csr(std::vector<Entry<T>>& entries, std::uint64_t rows, std::uint64_t cols, const std::string& source) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry<T>& a, const Entry<T>& b) { return a.row != b.row ? a.row < b.row : a.column < b.column; });
  CsrMatrix<T> m;
  m.rows = rows;
  m.columns = cols;
  m.row_start.assign(rows + 1, 0);
  m.column.reserve(entries.size());
  m.value.reserve(entries.size());
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const Entry<T>& e = entries[k];
    if (k > 0 && entries[k - 1].row == e.row && entries[k - 1].column == e.column) {
      const auto [first, second] = std::minmax(entries[k - 1].line, e.line);
      throw InvalidArgument(source + ":" + std::to_string(second) + ": entry (" + std::to_string(e.row + 1) + ", " +
                            std::to_string(e.column + 1) + ") appears twice (also on line " + std::to_string(first) +
                            ")");
    }
    ++m.row_start[e.row + 1];
    m.column.push_back(static_cast<ColumnIndex>(e.column));
    m.value.push_back(e.value);
  }
  std::partial_sum(m.row_start.begin(), m.row_start.end(), m.row_start.begin());
  return m;
}

// The header and the size lines, checked.
MatrixMarketSize read_size(MatrixMarketLines& lines, bool complex_ok) {
  if (!lines.next()) lines.fail_at(1, "empty file: expected a %%MatrixMarket header");
  const MatrixMarketHeader header = read_header(lines, complex_ok);
  const auto [rows, cols, entries, rows_text, cols_text] = lines.next_size();
  if (rows > kMaxSparseDimension || cols > kMaxSparseDimension) {
    lines.fail("a matrix of " + rows_text + " x " + cols_text + " is beyond the " +
               std::to_string(kMaxSparseDimension) + " rows and columns supported");
  }
  if (header.symmetry != MatrixSymmetry::general && rows != cols) {
    lines.fail(std::string("a ") + symmetry_name(header.symmetry) + " matrix is square, this one is " + rows_text +
               " x " + cols_text);
  }
  const std::uint64_t stored_limit =
      header.symmetry == MatrixSymmetry::general ? kMaxSparseEntries : kMaxSparseEntries / 2;
  if (entries > stored_limit) {
    lines.fail(std::to_string(entries) + " entries are more than the " + std::to_string(stored_limit) + " supported (" +
               std::to_string(kMaxSparseEntries) + " once mirrored)");
  }
  return {rows, cols, entries, header};
}

std::ifstream open_matrix_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument(printable(path) + ": cannot open the matrix file");
  return in;
}

}  // namespace

MatrixMarketSize read_matrix_market_size(std::istream& in, const std::string& source) {
  MatrixMarketLines lines(in, source);
  return read_size(lines, true);
}

MatrixMarketSize read_matrix_market_size_file(const std::string& path) {
  std::ifstream in = open_matrix_file(path);
  return read_matrix_market_size(in, path);
}

template <class T>
CsrMatrix<T> read_csr_matrix_market(std::istream& in, const std::string& source) {
  MatrixMarketLines lines(in, source);
  const MatrixMarketSize size = read_size(lines, kComplex<T>);
  if (const std::string why = memory_shortfall(csr_read_bytes<T>(size)); !why.empty()) {
    lines.fail("a matrix of " + std::to_string(size.rows) + " x " + std::to_string(size.columns) + " with " +
               std::to_string(size.entries) + " entries " + why);
  }
  std::vector<Entry<T>> read = read_entries<T>(lines, size.header, size.rows, size.columns, size.entries);
  mirror(read, size.header.symmetry);
  return to_csr(read, size.rows, size.columns, source);
}

template <class T>
CsrMatrix<T> read_csr_matrix_market_file(const std::string& path) {
  std::ifstream in = open_matrix_file(path);
  return read_csr_matrix_market<T>(in, path);
}

template CsrMatrix<double> read_csr_matrix_market<double>(std::istream&, const std::string&);
template CsrMatrix<std::complex<double>> read_csr_matrix_market<std::complex<double>>(std::istream&,
                                                                                      const std::string&);
template CsrMatrix<double> read_csr_matrix_market_file<double>(const std::string&);
template CsrMatrix<std::complex<double>> read_csr_matrix_market_file<std::complex<double>>(const std::string&);

}  // namespace switchyard::halo
