#include "switchyard/schedulers/comm_matrix.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <istream>
#include <numeric>
#include <ostream>
#include <random>
#include <sstream>

#include "switchyard/errors.hpp"
#include "switchyard/machine_memory.hpp"
#include "switchyard/matrix_market_lines.hpp"

namespace switchyard::schedulers {

namespace {

[[noreturn]] void bad_rank(const char* what, Rank r, Rank n) {
  throw InvalidArgument("switchyard: CommMatrix::" + std::string(what) + ": rank " + std::to_string(r) +
                        " is out of range for a " + std::to_string(n) + "-process matrix");
}

template <class Row>
auto find_entry(Row& row, Rank dst) {
  return std::lower_bound(row.begin(), row.end(), dst, [](const MatrixEntry& e, Rank d) { return e.peer < d; });
}

}  // namespace

CommMatrix::CommMatrix(Rank processes) {
  if (processes > kMaxMatrixProcesses) {
    throw InvalidArgument("switchyard: CommMatrix: " + std::to_string(processes) + " processes is more than the " +
                          std::to_string(kMaxMatrixProcesses) + " supported");
  }
  rows_.resize(processes);
  row_bytes_.assign(processes, 0);
  column_bytes_.assign(processes, 0);
}

void CommMatrix::set(Rank src, Rank dst, std::uint64_t bytes) {
  if (src >= size()) bad_rank("set", src, size());
  if (dst >= size()) bad_rank("set", dst, size());
  auto& row = rows_[src];
  auto it = find_entry(row, dst);
  const bool present = it != row.end() && it->peer == dst;
  const std::uint64_t old = present ? it->bytes : 0;
  if (const char* sum = overflowing_sum(src, dst, bytes)) {
    throw InvalidArgument("switchyard: CommMatrix::set: " + std::to_string(bytes) + " bytes from rank " +
                          std::to_string(src) + " to rank " + std::to_string(dst) + " take " + sum + " beyond the " +
                          std::to_string(kMaxMatrixBytes) + " bytes a matrix sum may reach");
  }
  row_bytes_[src] += bytes - old;
  column_bytes_[dst] += bytes - old;
  total_bytes_ += bytes - old;
  if (bytes == 0) {
    if (present) row.erase(it);
  } else if (present) {
    it->bytes = bytes;
  } else {
    row.insert(it, MatrixEntry{dst, bytes});
  }
}

const char* CommMatrix::overflowing_sum(Rank src, Rank dst, std::uint64_t bytes) const {
  const std::uint64_t old = at(src, dst);
  // Each sum less the old entry is at most kMaxMatrixBytes, so no comparison can wrap.
  if (bytes > kMaxMatrixBytes - (row_bytes_[src] - old)) return "its row's sum";
  if (bytes > kMaxMatrixBytes - (column_bytes_[dst] - old)) return "its column's sum";
  if (bytes > kMaxMatrixBytes - (total_bytes_ - old)) return "the matrix's total";
  return nullptr;
}

std::uint64_t CommMatrix::at(Rank src, Rank dst) const {
  if (src >= size()) bad_rank("at", src, size());
  if (dst >= size()) bad_rank("at", dst, size());
  const auto& row = rows_[src];
  auto it = find_entry(row, dst);
  return it != row.end() && it->peer == dst ? it->bytes : 0;
}

std::vector<MatrixEntry> CommMatrix::column(Rank dst) const {
  if (dst >= size()) bad_rank("column", dst, size());
  std::vector<MatrixEntry> out;
  for (Rank src = 0; src < size(); ++src) {
    if (const std::uint64_t b = at(src, dst)) out.push_back({src, b});
  }
  return out;
}

std::uint64_t CommMatrix::messages() const noexcept {
  std::uint64_t n = 0;
  for (const auto& row : rows_) n += row.size();
  return n;
}

std::uint64_t CommMatrix::max_degree() const {
  std::vector<std::uint64_t> in(size(), 0);
  std::uint64_t best = 0;
  for (const auto& row : rows_) {
    best = std::max<std::uint64_t>(best, row.size());
    for (const auto& e : row) best = std::max(best, ++in[e.peer]);
  }
  return best;
}

std::uint64_t CommMatrix::max_load_bytes() const {
  std::uint64_t best = 0;
  for (Rank i = 0; i < size(); ++i) best = std::max({best, row_bytes_[i], column_bytes_[i]});
  return best;
}

namespace {

// Fig. 7: the d shifted diagonals, then rows and columns shuffled. A uniform
// random permutation of each (Fisher-Yates) is what "switch random rows and
// columns ManyTimes" converges to.
template <class Size>
CommMatrix fig7_pattern(Rank n, Rank d, std::uint64_t seed, Size size_of) {
  if (d > n) {
    throw InvalidArgument("switchyard: Fig. 7 matrix: density " + std::to_string(d) + " exceeds the " +
                          std::to_string(n) + " processes");
  }
  std::mt19937_64 rng(seed);
  std::vector<Rank> row_perm(n), col_perm(n);
  std::iota(row_perm.begin(), row_perm.end(), Rank{0});
  std::iota(col_perm.begin(), col_perm.end(), Rank{0});
  std::shuffle(row_perm.begin(), row_perm.end(), rng);
  std::shuffle(col_perm.begin(), col_perm.end(), rng);
  CommMatrix m(n);
  for (Rank j = 0; j < n; ++j) {
    for (Rank i = 0; i < d; ++i) m.set(row_perm[j], col_perm[(i + j) % n], size_of(rng));
  }
  return m;
}

}  // namespace

CommMatrix fig7_matrix(Rank n, Rank d, std::uint64_t bytes, std::uint64_t seed) {
  if (bytes == 0) throw InvalidArgument("switchyard: Fig. 7 matrix: message size must be positive");
  return fig7_pattern(n, d, seed, [bytes](std::mt19937_64&) { return bytes; });
}

CommMatrix nonuniform_matrix(Rank n, Rank d, std::uint64_t unit, std::uint64_t seed) {
  if (unit == 0) throw InvalidArgument("switchyard: non-uniform matrix: unit size must be positive");
  return fig7_pattern(n, d, seed, [unit](std::mt19937_64& rng) {
    return unit * std::uniform_int_distribution<std::uint64_t>(1, 32)(rng);
  });
}

namespace {
// An entry held in its row (16 bytes), with the row's spare capacity.
constexpr double kBytesPerLoadedEntry = 32;
}  // namespace

CommMatrix read_matrix_market(std::istream& in, const std::string& source) {
  MatrixMarketLines lines(in, source);
  if (!lines.next()) lines.fail_at(1, "empty file: expected a %%MatrixMarket header");
  {
    auto h = lines.tokens();
    for (auto& t : h) std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool coordinate = h.size() == 5 && h[0] == "%%matrixmarket" && h[1] == "matrix" && h[2] == "coordinate";
    // Any other coordinate matrix is a sparse matrix: what its product with a
    // vector exchanges is its halo, which the halo library derives.
    const auto is_one_of = [](const std::string& word, std::initializer_list<const char*> words) {
      return std::any_of(words.begin(), words.end(), [&](const char* w) { return word == w; });
    };
    if (coordinate && is_one_of(h[3], {"integer", "real", "complex", "pattern"}) &&
        is_one_of(h[4], {"general", "symmetric", "skew-symmetric", "hermitian"}) &&
        (h[3] != "integer" || h[4] != "general")) {
      lines.fail("'" + printable(lines.text()) +
                 "' is a sparse matrix, not a communication matrix (integer general: row = sender, column = "
                 "receiver, value = bytes); its product's halo exchange is `switchyard exchange --sparse FILE "
                 "--blocks P`, its rows in P blocks (switchyard::halo's halo_matrix() in a program)");
    }
    if (!coordinate || h[3] != "integer" || h[4] != "general") {
      lines.fail("expected '%%MatrixMarket matrix coordinate integer general', found '" + printable(lines.text()) +
                 "'");
    }
  }
  const auto [rows, cols, entries, rows_text, cols_text] = lines.next_size();
  if (rows != cols) lines.fail("a communication matrix is square, this one is " + rows_text + " x " + cols_text);
  if (rows == 0 || rows > kMaxMatrixProcesses) {
    lines.fail("process count " + std::to_string(rows) + " is outside 1.." + std::to_string(kMaxMatrixProcesses));
  }
  // Refused before the body is read: what the header announces is what the
  // entries would take, however the file goes on.
  if (const std::string why = memory_shortfall(static_cast<double>(entries) * kBytesPerLoadedEntry); !why.empty()) {
    lines.fail("the header announces " + std::to_string(entries) + " entries: holding them " + why);
  }
  CommMatrix m(static_cast<Rank>(rows));
  std::uint64_t seen = 0;
  for (auto t = lines.next_data(); !t.empty(); t = lines.next_data()) {
    if (t.size() != 3) lines.fail("expected 'row column bytes', found '" + printable(lines.text()) + "'");
    const std::uint64_t r = lines.number(t[0], "row");
    const std::uint64_t c = lines.number(t[1], "column");
    const std::uint64_t b = lines.number(t[2], "byte count");
    if (r < 1 || r > rows) lines.fail("row " + t[0] + " is outside 1.." + std::to_string(rows));
    if (c < 1 || c > cols) lines.fail("column " + t[1] + " is outside 1.." + std::to_string(cols));
    if (b == 0) lines.fail("entry (" + t[0] + ", " + t[1] + ") has 0 bytes: leave it out instead");
    const auto src = static_cast<Rank>(r - 1), dst = static_cast<Rank>(c - 1);
    if (m.at(src, dst) != 0) lines.fail("entry (" + t[0] + ", " + t[1] + ") appears twice");
    if (++seen > entries) lines.fail("more entries than the " + std::to_string(entries) + " announced");
    if (const char* sum = m.overflowing_sum(src, dst, b)) {
      lines.fail("entry (" + t[0] + ", " + t[1] + ") takes " + sum + " (row " + t[0] + ", column " + t[1] +
                 ") beyond " + std::to_string(kMaxMatrixBytes) + " bytes");
    }
    m.set(src, dst, b);
  }
  if (seen != entries) {
    lines.fail("the header announces " + std::to_string(entries) + " entries, the file has " + std::to_string(seen));
  }
  return m;
}

CommMatrix read_matrix_market_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument(printable(path) + ": cannot open the matrix file");
  return read_matrix_market(in, path);
}

void write_matrix_market(std::ostream& out, const CommMatrix& m) {
  // The reader refuses a matrix without processes; so does the writer, rather than write a file nothing reads.
  if (m.size() == 0) throw InvalidArgument("switchyard: write_matrix_market: the matrix has no processes");
  out << "%%MatrixMarket matrix coordinate integer general\n";
  out << "% switchyard communication matrix: row = sender, column = receiver (1-based), value = bytes\n";
  out << m.size() << ' ' << m.size() << ' ' << m.messages() << '\n';
  for (Rank i = 0; i < m.size(); ++i) {
    for (const auto& e : m.row(i)) out << (i + 1) << ' ' << (e.peer + 1) << ' ' << e.bytes << '\n';
  }
}

}  // namespace switchyard::schedulers
