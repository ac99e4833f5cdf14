#pragma once
/// @file
/// The errors switchyard raises, all under Error, and the helpers that format
/// what an error message quotes.

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace switchyard {

/// Every error switchyard raises derives from Error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad argument to an API call, a bad option or a bad input file. The message
/// says what was wrong and where.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// `text` as it may appear inside a one-line error message: control characters
/// (C0, DEL, and C1 as UTF-8 encodes them) written as escapes (`\n`, `\t`, `\xNN`),
/// so that a hostile value or file line can neither break the line nor drive the
/// terminal; other text, UTF-8 included, stays readable. Backslashes stay as
/// they are, which makes it idempotent: a message built from printable parts
/// may be made printable again where it is shown.
inline std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto escape = [&out](unsigned char c) {
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool c1 = c == 0xc2 && i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xe0) == 0x80;
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c1) {
      escape(c);
      escape(static_cast<unsigned char>(text[++i]));
    } else {
      out += text[i];
    }
  }
  return out;
}

/// A measured or computed quantity as an error message shows it: six
/// significant digits at any magnitude ("1.6e+301", where std::to_string
/// writes 300 digits and a cast to an integer wraps).
inline std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

/// Thrown inside every process of a job that is being cancelled, so that it
/// unwinds. Run() rethrows the error that caused the cancel; this one only
/// when the job was stopped from outside (RunOptions::stop, JobHandle::cancel),
/// with a message that names the job.
class JobCancelled : public Error {
 public:
  JobCancelled() : Error("switchyard: job cancelled") {}
  /// With the message `what`.
  explicit JobCancelled(const std::string& what) : Error(what) {}
};

/// A job made no progress for longer than its stall timeout. The message names
/// every blocked process and what it was waiting for.
class StallError : public Error {
 public:
  using Error::Error;
};

}  // namespace switchyard
