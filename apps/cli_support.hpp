#pragma once
// What the subcommands of the `switchyard` tool share: exit codes, the error
// for bad input, option-value parsing and output files.

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <switchyard/errors.hpp>

namespace switchyard::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Bad input: the message names the option and the offending value.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A whole number in [lo, hi]; `what` is the option, for the message.
inline std::uint64_t parse_uint(std::string_view text, const std::string& what, std::uint64_t lo, std::uint64_t hi) {
  const std::string_view s = trim(text);
  if (s.empty()) throw UsageError(what + ": a number is required, got an empty value");
  if (s.front() == '-') {
    throw UsageError(what + ": '" + std::string(text) + "' is negative; it must be between " + std::to_string(lo) +
                     " and " + std::to_string(hi));
  }
  std::uint64_t v = 0;
  const char* begin = s.data() + (s.front() == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    throw UsageError(what + ": '" + std::string(text) + "' is too large; it must be between " + std::to_string(lo) +
                     " and " + std::to_string(hi));
  }
  if (ec != std::errc() || end != s.data() + s.size() || begin == end) {
    throw UsageError(what + ": '" + std::string(text) + "' is not a whole number");
  }
  if (v < lo || v > hi) {
    throw UsageError(what + ": " + std::to_string(v) + " is out of range; it must be between " + std::to_string(lo) +
                     " and " + std::to_string(hi));
  }
  return v;
}

// Checked before the command runs (created if need be, never truncated), written after.
class OutputFile {
 public:
  OutputFile(std::string option, std::string path) : option_(std::move(option)), path_(std::move(path)) {
    std::error_code ec;
    existed_ = std::filesystem::exists(path_, ec);
    if (std::filesystem::is_directory(path_, ec)) throw UsageError(option_ + ": '" + path_ + "' is a directory");
    errno = 0;
    std::ofstream probe(path_, std::ios::app);  // creates it if need be, never truncates
    if (!probe) {
      throw UsageError(option_ + ": cannot write to '" + path_ + "'" +
                       (errno ? std::string(": ") + std::strerror(errno) : std::string()));
    }
  }
  // The run failed: do not leave behind an empty file that was not there before.
  void abandon() {
    std::error_code ec;
    if (!existed_ && std::filesystem::is_empty(path_, ec)) std::filesystem::remove(path_, ec);
  }
  void write(const std::string& text) {
    std::ofstream out(path_, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error(option_ + ": writing '" + path_ + "' failed");
  }
  const std::string& path() const { return path_; }

 private:
  std::string option_;
  std::string path_;
  bool existed_ = false;
};

// Runs a command's body and turns what it throws into the exit code, the
// message on stderr: bad input 2, a stalled job or a failed run 1.
template <class Body>
int run_reporting_errors(Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << "switchyard: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const StallError& e) {
    std::cerr << e.what() << "\n";  // "switchyard: job stalled: ...", naming every blocked process
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "switchyard: failed: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace switchyard::cli
