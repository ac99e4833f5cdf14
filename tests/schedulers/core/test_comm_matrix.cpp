// CommMatrix: entry access, rows and columns, degree and load bounds, the
// Fig. 7 and non-uniform generators, and Matrix Market input/output, including
// the error (source and line) for every kind of malformed file.

#include <switchyard/errors.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

TEST(CommMatrix, SetAtOverwriteRemove) {
  CommMatrix m(4);
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.messages(), 0u);
  m.set(1, 2, 100);
  m.set(1, 0, 7);
  m.set(3, 3, 5);  // a self-message is an ordinary entry
  EXPECT_EQ(m.at(1, 2), 100u);
  EXPECT_EQ(m.at(1, 0), 7u);
  EXPECT_EQ(m.at(3, 3), 5u);
  EXPECT_EQ(m.at(2, 1), 0u);
  m.set(1, 2, 50);
  EXPECT_EQ(m.at(1, 2), 50u) << "set on an existing entry overwrites it";
  EXPECT_EQ(m.messages(), 3u);
  m.set(1, 2, 0);
  EXPECT_EQ(m.at(1, 2), 0u) << "0 bytes removes the entry";
  EXPECT_EQ(m.messages(), 2u);
  m.set(0, 0, 0);  // removing an absent entry is a no-op
  EXPECT_EQ(m.messages(), 2u);
}

TEST(CommMatrix, BadRanksThrow) {
  CommMatrix m(3);
  EXPECT_THROW(m.set(3, 0, 1), InvalidArgument);
  EXPECT_THROW(m.set(0, 3, 1), InvalidArgument);
  EXPECT_THROW(m.at(3, 0), InvalidArgument);
  EXPECT_THROW(m.at(0, 7), InvalidArgument);
  EXPECT_THROW(m.column(3), InvalidArgument);
}

TEST(CommMatrix, RowsAndColumnsAreSorted) {
  CommMatrix m(5);
  m.set(2, 4, 1);
  m.set(2, 0, 2);
  m.set(2, 3, 3);
  m.set(0, 3, 4);
  m.set(4, 3, 5);
  const auto row = m.row(2);
  ASSERT_EQ(row.size(), 3u);
  EXPECT_EQ(row[0].peer, 0u);
  EXPECT_EQ(row[1].peer, 3u);
  EXPECT_EQ(row[2].peer, 4u);
  EXPECT_EQ(row[1].bytes, 3u);
  const auto col = m.column(3);
  ASSERT_EQ(col.size(), 3u);
  EXPECT_EQ(col[0].peer, 0u);
  EXPECT_EQ(col[0].bytes, 4u);
  EXPECT_EQ(col[1].peer, 2u);
  EXPECT_EQ(col[2].peer, 4u);
  EXPECT_TRUE(m.column(1).empty());
  EXPECT_TRUE(m.row(1).empty());
}

TEST(CommMatrix, DegreeAndLoads) {
  CommMatrix m(4);
  EXPECT_EQ(m.max_degree(), 0u);
  EXPECT_EQ(m.max_load_bytes(), 0u);
  // Process 3 receives three messages, every process sends at most two.
  m.set(0, 3, 10);
  m.set(1, 3, 20);
  m.set(2, 3, 30);
  m.set(0, 1, 5);
  EXPECT_EQ(m.messages(), 4u);
  EXPECT_EQ(m.total_bytes(), 65u);
  EXPECT_EQ(m.max_degree(), 3u);
  EXPECT_EQ(m.max_load_bytes(), 60u) << "process 3 receives 60 bytes";
  // A big sender: process 1 now sends 20 + 100.
  m.set(1, 2, 100);
  EXPECT_EQ(m.max_load_bytes(), 120u);
  // A self-message counts once as sent and once as received.
  CommMatrix s(2);
  s.set(0, 0, 8);
  EXPECT_EQ(s.max_degree(), 1u);
  EXPECT_EQ(s.max_load_bytes(), 8u);
}

TEST(CommMatrix, Fig7HasExactlyDEntriesPerRowAndColumn) {
  for (const auto& [n, d] :
       std::vector<std::pair<Rank, Rank>>{{1, 1}, {2, 1}, {7, 3}, {32, 8}, {100, 99}, {128, 128}, {5, 0}}) {
    const CommMatrix m = fig7_matrix(n, d, 64, 1234 + n);
    ASSERT_EQ(m.size(), n);
    EXPECT_EQ(m.messages(), std::uint64_t{n} * d);
    EXPECT_EQ(m.total_bytes(), std::uint64_t{n} * d * 64);
    std::vector<Rank> in(n, 0);
    for (Rank i = 0; i < n; ++i) {
      EXPECT_EQ(m.row(i).size(), d) << "row " << i << " of n=" << n << " d=" << d;
      for (const auto& e : m.row(i)) {
        EXPECT_EQ(e.bytes, 64u);
        ++in[e.peer];
      }
    }
    for (Rank j = 0; j < n; ++j) EXPECT_EQ(in[j], d) << "column " << j << " of n=" << n << " d=" << d;
    EXPECT_EQ(m.max_degree(), d);
  }
}

TEST(CommMatrix, Fig7IsDeterministicPerSeedAndPermuted) {
  EXPECT_EQ(fig7_matrix(64, 5, 1, 9), fig7_matrix(64, 5, 1, 9));
  EXPECT_NE(fig7_matrix(64, 5, 1, 9), fig7_matrix(64, 5, 1, 10));
  // Unpermuted, row j would be the columns j..j+d-1: the shuffle must break that.
  const CommMatrix m = fig7_matrix(64, 5, 1, 9);
  int diagonal_rows = 0;
  for (Rank j = 0; j < 64; ++j) diagonal_rows += m.at(j, j) != 0 && m.at(j, (j + 1) % 64) != 0 ? 1 : 0;
  EXPECT_LT(diagonal_rows, 32);
}

TEST(CommMatrix, Fig7RejectsBadArguments) {
  EXPECT_THROW(fig7_matrix(4, 5, 1, 0), InvalidArgument);
  EXPECT_THROW(fig7_matrix(4, 2, 0, 0), InvalidArgument);
  EXPECT_THROW(nonuniform_matrix(4, 5, 1, 0), InvalidArgument);
  EXPECT_THROW(nonuniform_matrix(4, 2, 0, 0), InvalidArgument);
}

TEST(CommMatrix, NonuniformSizesAreUnitTimes1To32) {
  const std::uint64_t unit = 48;
  const CommMatrix m = nonuniform_matrix(128, 16, unit, 5);
  std::set<std::uint64_t> seen;
  std::vector<Rank> in(128, 0);
  for (Rank i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m.row(i).size(), 16u);
    for (const auto& e : m.row(i)) {
      EXPECT_EQ(e.bytes % unit, 0u);
      EXPECT_GE(e.bytes, unit * 1);
      EXPECT_LE(e.bytes, unit * 32);
      seen.insert(e.bytes / unit);
      ++in[e.peer];
    }
  }
  for (Rank j = 0; j < 128; ++j) EXPECT_EQ(in[j], 16u);
  EXPECT_EQ(seen.size(), 32u) << "2048 draws from 1..32 should hit every value";
  EXPECT_EQ(nonuniform_matrix(128, 16, unit, 5), m);
}

// Every sum a scheduler or a buffer layout forms is refused before it can wrap:
// a row, a column, the total, and a replaced entry counts only once.
TEST(CommMatrix, SumsThatDoNotFitAreRefused) {
  CommMatrix m(3);
  m.set(0, 1, kMaxMatrixBytes);
  EXPECT_THROW(m.set(0, 2, 1), InvalidArgument) << "row";
  EXPECT_THROW(m.set(2, 1, 1), InvalidArgument) << "column";
  EXPECT_THROW(m.set(2, 0, 1), InvalidArgument) << "total";
  m.set(0, 1, kMaxMatrixBytes - 1);  // a replacement, not an addition
  m.set(2, 0, 1);
  EXPECT_EQ(m.total_bytes(), kMaxMatrixBytes);
  EXPECT_EQ(m.max_load_bytes(), kMaxMatrixBytes - 1);
  EXPECT_EQ(m.row_bytes(0), kMaxMatrixBytes - 1);
  EXPECT_EQ(m.column_bytes(0), 1u);
  EXPECT_STREQ(m.overflowing_sum(1, 2, 5), "the matrix's total");
  try {
    m.set(0, 2, 5);
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("from rank 0 to rank 2 take its row's sum beyond"), std::string::npos)
        << e.what();
  }
}

// A file that is no Matrix Market text fails at once on its first line, without
// reading it whole; what is echoed stays one printable line.
TEST(CommMatrix, NonTextInputFailsAtOnceAndIsEchoedPrintably) {
  EXPECT_THROW(read_matrix_market_file("/dev/zero"), InvalidArgument);
  std::istringstream in("%%MatrixMarket\x1b[31m red\tmatrix\n");
  try {
    read_matrix_market(in, "odd.mtx");
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("found '%%MatrixMarket\\x1b[31m red\\tmatrix'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\x1b'), std::string::npos);
  }
  EXPECT_EQ(printable("a\nb\\c\x7f\xc2\x9b|\xce\x94"), "a\\nb\\c\\x7f\\xc2\\x9b|\xce\x94")
      << "C0, DEL and C1 escaped; other UTF-8 (here a Delta) kept";
  EXPECT_EQ(printable(printable("a\nb\x01")), printable("a\nb\x01")) << "idempotent";
}

TEST(CommMatrix, MatrixMarketRoundTrip) {
  for (const CommMatrix& m : {nonuniform_matrix(37, 5, 3, 1), fig7_matrix(1, 1, 9, 2), CommMatrix(6)}) {
    std::stringstream text;
    write_matrix_market(text, m);
    EXPECT_EQ(read_matrix_market(text, "roundtrip.mtx"), m);
  }
  // A matrix without processes would be written as a file the reader refuses: the writer refuses it instead.
  std::stringstream empty;
  EXPECT_THROW(write_matrix_market(empty, CommMatrix()), switchyard::InvalidArgument);
  EXPECT_THROW(CommMatrix(kMaxMatrixProcesses + 1), switchyard::InvalidArgument);
}

TEST(CommMatrix, MatrixMarketFile) {
  const auto path = std::filesystem::temp_directory_path() / ("switchyard_test_" + std::to_string(::getpid()) + ".mtx");
  const CommMatrix m = nonuniform_matrix(20, 4, 16, 3);
  {
    std::ofstream out(path);
    write_matrix_market(out, m);
  }
  EXPECT_EQ(read_matrix_market_file(path.string()), m);
  std::filesystem::remove(path);
  try {
    read_matrix_market_file(path.string());
    FAIL() << "a missing file must throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST(CommMatrix, MatrixMarketAcceptsCommentsBlankLinesAndCrLf) {
  std::istringstream in(
      "%%MatrixMarket matrix coordinate integer general\r\n"
      "% a comment\r\n"
      "\r\n"
      "3 3 2\r\n"
      "% between entries\r\n"
      "1 3 70\r\n"
      "\r\n"
      "3 3 5\r\n");
  const CommMatrix m = read_matrix_market(in, "ok.mtx");
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.at(0, 2), 70u);
  EXPECT_EQ(m.at(2, 2), 5u);
  EXPECT_EQ(m.messages(), 2u);
}

// A UTF-8 byte order mark before the header (some editors write one) is
// skipped; the reader said "expected '%%MatrixMarket ...', found
// '%%MatrixMarket ...'" with the mark invisible in both.
TEST(CommMatrix, MatrixMarketSkipsAByteOrderMark) {
  std::istringstream in(
      "\xEF\xBB\xBF%%MatrixMarket matrix coordinate integer general\n"
      "2 2 1\n"
      "1 2 9\n");
  const CommMatrix m = read_matrix_market(in, "bom.mtx");
  EXPECT_EQ(m.at(0, 1), 9u);
  // Only before the first line: elsewhere it is what it is, and is named.
  std::istringstream later(
      "%%MatrixMarket matrix coordinate integer general\n"
      "\xEF\xBB\xBF"
      "2 2 1\n"
      "1 2 9\n");
  EXPECT_THROW(read_matrix_market(later, "late.mtx"), InvalidArgument);
}

struct Malformed {
  const char* what;
  std::string text;
  int line;  // the line the error must name
};

class MatrixMarketErrors : public ::testing::TestWithParam<Malformed> {};

TEST_P(MatrixMarketErrors, NameSourceAndLine) {
  const Malformed& c = GetParam();
  std::istringstream in(c.text);
  try {
    read_matrix_market(in, "input/com.mtx");
    FAIL() << c.what << ": no error";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("input/com.mtx:" + std::to_string(c.line) + ":"), std::string::npos)
        << c.what << ": expected line " << c.line << " in: " << msg;
  }
}

const std::string kHeader = "%%MatrixMarket matrix coordinate integer general\n";

INSTANTIATE_TEST_SUITE_P(
    CommMatrix, MatrixMarketErrors,
    ::testing::Values(
        Malformed{"empty file", "", 1},
        Malformed{"bad header", "%%MatrixMarket matrix array integer general\n2 2 0\n", 1},
        Malformed{"not a header", "2 2 0\n1 2 3\n", 1},
        Malformed{"real field", "%%MatrixMarket matrix coordinate real general\n2 2 0\n", 1},
        Malformed{"missing size line", kHeader + "% only a comment\n", 2},
        Malformed{"short size line", kHeader + "3 3\n1 2 5\n", 2},
        Malformed{"non-numeric size", kHeader + "% c\nthree 3 1\n1 2 5\n", 3},
        Malformed{"non-square", kHeader + "3 4 0\n", 2}, Malformed{"zero processes", kHeader + "0 0 0\n", 2},
        Malformed{"absurd process count", kHeader + "4000000000 4000000000 0\n", 2},
        Malformed{"fewer entries than announced", kHeader + "3 3 3\n1 2 5\n2 3 5\n", 4},
        Malformed{"more entries than announced", kHeader + "3 3 1\n1 2 5\n2 3 5\n3 1 5\n", 4},
        Malformed{"row 0", kHeader + "3 3 2\n1 2 5\n0 2 5\n", 4},
        Malformed{"row past n", kHeader + "3 3 2\n1 2 5\n4 2 5\n", 4},
        Malformed{"column past n", kHeader + "3 3 1\n% c\n1 4 5\n", 4},
        Malformed{"zero bytes", kHeader + "3 3 1\n2 2 0\n", 3},
        Malformed{"duplicate", kHeader + "3 3 3\n1 2 5\n2 1 5\n1 2 6\n", 5},
        Malformed{"non-numeric entry", kHeader + "3 3 1\n1 x 5\n", 3},
        Malformed{"negative bytes", kHeader + "3 3 1\n1 2 -5\n", 3},
        Malformed{"fractional bytes", kHeader + "3 3 1\n1 2 5.5\n", 3},
        Malformed{"entry with 4 fields", kHeader + "3 3 1\n1 2 5 6\n", 3},
        Malformed{"row sum beyond 2^63", kHeader + "3 3 2\n1 2 9223372036854775808\n1 3 9223372036854775808\n", 3},
        Malformed{"column sum wraps", kHeader + "3 3 2\n1 3 9223372036854775000\n2 3 9223372036854775000\n", 4},
        Malformed{"total wraps", kHeader + "3 3 3\n1 2 4611686018427387904\n2 3 4611686018427387903\n3 1 9\n", 5},
        Malformed{"endless first line", std::string(5000, '\0'), 1},
        Malformed{"endless entry line", kHeader + "3 3 1\n1 2 " + std::string(5000, '7') + "\n", 3}),
    [](const auto& info) {
      std::string name = info.param.what;
      for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

}  // namespace

namespace {

// A sparse matrix given where a communication matrix is expected, as a new
// user did: the error says how to get its product's halo exchange.
TEST(CommMatrix, ASparseMatrixSaysHowToGetItsHaloExchange) {
  for (const std::string header :
       {"%%MatrixMarket matrix coordinate real symmetric", "%%MatrixMarket matrix coordinate pattern general",
        "%%MatrixMarket matrix coordinate integer symmetric", "%%MatrixMarket matrix coordinate complex hermitian"}) {
    std::istringstream in(header + "\n3 3 0\n");
    try {
      (void)switchyard::schedulers::read_matrix_market(in, "a.mtx");
      ADD_FAILURE() << header << " accepted";
    } catch (const switchyard::InvalidArgument& e) {
      EXPECT_EQ(
          std::string(e.what()).rfind("a.mtx:1: '" + header + "' is a sparse matrix, not a communication matrix", 0),
          0u)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("switchyard exchange --sparse FILE --blocks P"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
