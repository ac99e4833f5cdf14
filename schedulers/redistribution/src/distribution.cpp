#include "switchyard/schedulers/redistribution/distribution.hpp"

#include <cctype>
#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers::redistribution {

namespace {

constexpr const char* kDistributionExample = " (write e.g. cyclic(6)@4 or block,cyclic(2)@2x4)";
constexpr const char* kExtentExample = " (write e.g. 120000 or 1000x1000)";

// A hand-written scanner: the messages point at the character where the text
// stops making sense, which a regular expression could not.
class Scanner {
 public:
  Scanner(std::string_view text, const char* example) : text_(text), example_(example) {}

  [[noreturn]] void fail(const std::string& what, std::size_t at) const {
    throw InvalidArgument("'" + std::string(text_) + "': " + what + " at character " + std::to_string(at + 1) +
                          example_);
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

  void skip_blanks() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool at_end() {
    skip_blanks();
    return pos_ == text_.size();
  }
  std::size_t pos() const { return pos_; }
  // The next character, or '\0' at the end (after blanks).
  char peek() {
    skip_blanks();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // A word of letters, lower-cased.
  std::string word() {
    skip_blanks();
    std::string w;
    while (pos_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_]))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(text_[pos_++])));
    }
    return w;
  }
  // A whole number in [1, max]; `what` names it in the message.
  Index positive(const std::string& what, Index max) {
    skip_blanks();
    const std::size_t start = pos_;
    if (pos_ == text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      fail(what + " must be a positive whole number", start);
    }
    Index v = 0;
    bool too_large = false;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const Index digit = text_[pos_++] - '0';
      too_large |= v > (max - digit) / 10;
      if (!too_large) v = v * 10 + digit;
    }
    if (too_large) fail(what + " is too large (at most " + std::to_string(max) + ")", start);
    if (v == 0) fail(what + " must be positive", start);
    return v;
  }

 private:
  std::string_view text_;
  const char* example_;
  std::size_t pos_ = 0;
};

}  // namespace

Distribution Distribution::parse(std::string_view text) {
  Scanner in(text, kDistributionExample);
  if (in.at_end()) in.fail("the distribution is empty");
  Distribution d;
  do {
    const std::size_t at = (in.skip_blanks(), in.pos());
    const std::string w = in.word();
    if (w == "block") {
      if (in.peek() == '(') in.fail("block takes no block size (cyclic(b) has one)");
      d.dims.push_back({DimKind::block, 0});
    } else if (w == "cyclic") {
      Index b = 1;
      if (in.accept('(')) {
        b = in.positive("block size", kMaxElements);
        if (!in.accept(')')) in.fail("expected ')' after the block size");
      }
      d.dims.push_back({DimKind::cyclic, b});
    } else if (w.empty()) {
      in.fail("expected block, cyclic or cyclic(b)", at);
    } else {
      in.fail("'" + w + "' is not a distribution (block, cyclic or cyclic(b))", at);
    }
  } while (in.accept(','));
  if (!in.accept('@')) {
    in.fail(in.at_end() ? std::string("the process grid is missing: expected '@' and e.g. 4 or 2x4")
                        : std::string("expected ',' or '@'"));
  }
  Index processes = 1;
  do {
    const std::size_t at = (in.skip_blanks(), in.pos());
    const Index p = in.positive("a grid dimension", kMaxProcesses);
    if (processes > kMaxProcesses / p) {
      in.fail("the grid has more than " + std::to_string(kMaxProcesses) + " processes", at);
    }
    processes *= p;
    d.grid.push_back(p);
  } while (in.accept('x') || in.accept('X'));
  if (!in.at_end()) in.fail("unexpected '" + std::string(1, in.peek()) + "'");
  if (d.grid.size() != d.dims.size()) {
    in.fail(std::to_string(d.dims.size()) + " distributed dimension(s) but a " + std::to_string(d.grid.size()) +
                "-dimensional process grid",
            text.find('@'));
  }
  return d;
}

std::string Distribution::str() const {
  std::string s;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (k) s += ',';
    s += dims[k].kind == DimKind::block ? "block" : "cyclic(" + std::to_string(dims[k].block) + ")";
  }
  s += '@';
  for (std::size_t k = 0; k < grid.size(); ++k) {
    if (k) s += 'x';
    s += std::to_string(grid[k]);
  }
  return s;
}

Index Distribution::processes() const {
  Index p = 1;
  for (Index g : grid) p *= g;
  return p;
}

std::vector<Index> parse_extent(std::string_view text) {
  Scanner in(text, kExtentExample);
  if (in.at_end()) in.fail("the extent is empty");
  std::vector<Index> extent;
  Index elements = 1;
  do {
    const std::size_t at = (in.skip_blanks(), in.pos());
    const Index n = in.positive("an extent", kMaxElements);
    if (elements > kMaxElements / n) {
      in.fail("the array has more than " + std::to_string(kMaxElements) + " elements", at);
    }
    elements *= n;
    extent.push_back(n);
  } while (in.accept('x') || in.accept('X'));
  if (!in.at_end()) in.fail("unexpected '" + std::string(1, in.peek()) + "'");
  return extent;
}

}  // namespace switchyard::schedulers::redistribution
