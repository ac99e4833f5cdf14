#pragma once
/// @file
/// Reading Matrix Market text line by line, for the readers of communication
/// matrices (schedulers) and of network adjacency matrices (primitives): lines
/// of bounded length, blank-separated tokens, whole numbers, and errors that
/// name the source and the line, echoing what was read printably.

#include <charconv>
#include <cstdint>
#include <istream>
#include <sstream>
#include <string>
#include <vector>

#include "switchyard/errors.hpp"

namespace switchyard {

/// A reader of Matrix Market text, one line at a time; its errors are
/// InvalidArgument "source:line: what".
class MatrixMarketLines {
 public:
  /// A Matrix Market line is a few numbers: a longer one is not a matrix (a
  /// binary file, /dev/zero), and reading it whole would grow without bound.
  static constexpr std::size_t kMaxLineLength = 1024;

  /// Reads `in`, which must outlive the reader; `source` (a file name) names it in errors.
  MatrixMarketLines(std::istream& in, std::string source) : in_(in), source_(std::move(source)) {}

  /// The next line into text(); false at the end of the input, line() then
  /// staying the last line read.
  bool next() {
    text_.clear();
    for (char c; in_.get(c);) {
      if (c == '\n') return took_line();
      if (text_.size() == kMaxLineLength) {
        fail_at(line_ + 1,
                "the line is longer than " + std::to_string(kMaxLineLength) + " characters: not a Matrix Market file");
      }
      text_.push_back(c);
    }
    if (in_.bad()) fail_at(line_ + 1, "read error");
    if (text_.empty()) return false;
    return took_line();
  }
  /// The next line that is neither blank nor a comment, split into tokens; empty at the end.
  std::vector<std::string> next_data() {
    while (next()) {
      if (!text_.empty() && text_[0] == '%') continue;
      auto t = tokens();
      if (!t.empty()) return t;
    }
    return {};
  }

  /// The 'rows columns entries' line after the header, its numbers and their text.
  struct Size {
    std::uint64_t rows = 0,  ///< the row count
        columns = 0,  ///< the column count
        entries = 0;  ///< the entry count
    std::string rows_text,  ///< the row count as written, for messages
        columns_text;  ///< the column count as written, for messages
  };
  /// The next data line as the size line; InvalidArgument unless it is three whole numbers.
  Size next_size() {
    const std::vector<std::string> t = next_data();
    if (t.empty()) fail("the file ends before its 'rows columns entries' line");
    if (t.size() != 3) fail("expected 'rows columns entries', found '" + printable(text_) + "'");
    return {number(t[0], "row count"), number(t[1], "column count"), number(t[2], "entry count"), t[0], t[1]};
  }

  /// The line last read, without its newline.
  const std::string& text() const noexcept { return text_; }
  /// The number (from 1) of the line last read; 0 before the first.
  std::uint64_t line() const noexcept { return line_; }
  /// text() split at blanks.
  std::vector<std::string> tokens() const {
    std::istringstream in(text_);
    std::vector<std::string> out;
    for (std::string t; in >> t;) out.push_back(t);
    return out;
  }
  /// `token` as a whole number; `what` names it in the error.
  std::uint64_t number(const std::string& token, const char* what) const {
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (ec != std::errc() || p != token.data() + token.size()) {
      fail(std::string(what) + " '" + printable(token) + "' is not a non-negative whole number");
    }
    return v;
  }
  /// InvalidArgument "source:line: what".
  [[noreturn]] void fail(const std::string& what) const { fail_at(line_, what); }
  /// InvalidArgument "source:line: what" for another line than the last read.
  [[noreturn]] void fail_at(std::uint64_t line, const std::string& what) const {
    throw InvalidArgument(source_ + ":" + std::to_string(line) + ": " + what);
  }

 private:
  /// Counts the line read into text_; a UTF-8 byte order mark that some
  /// editors put before the first line is not part of it.
  bool took_line() {
    if (++line_ == 1 && text_.rfind("\xEF\xBB\xBF", 0) == 0) text_.erase(0, 3);
    return true;
  }

  std::istream& in_;
  std::string source_;
  std::string text_;
  std::uint64_t line_ = 0;
};

}  // namespace switchyard
