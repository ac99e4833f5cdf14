#pragma once
// What the subcommands of the `switchyard` tool share: exit codes, the error
// for bad input, option-value parsing and output files.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>
#include <sstream>
#include <iostream>
#include <unistd.h>

#include "switchyard/errors.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include <utility>

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

// A byte count with an optional binary suffix: 16, 1024, 64K, 64KiB, 1M, 1G.
inline std::uint64_t parse_byte_count(std::string_view text, const std::string& what, std::uint64_t max) {
  std::string_view s = trim(text);
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::uint64_t unit = 1;
  for (const auto& [suffix, u] : {std::pair<std::string_view, std::uint64_t>{"kib", 1ull << 10},
                                  {"mib", 1ull << 20},
                                  {"gib", 1ull << 30},
                                  {"k", 1ull << 10},
                                  {"m", 1ull << 20},
                                  {"g", 1ull << 30}}) {
    if (lower.size() > suffix.size() && std::string_view(lower).substr(lower.size() - suffix.size()) == suffix) {
      s.remove_suffix(suffix.size());
      unit = u;
      break;
    }
  }
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw UsageError(what + ": '" + std::string(text) +
                     "' is not a byte count (write e.g. 16, 1024, 64K or 1M; K, M, G are powers of 1024)");
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > max / unit) {
    throw UsageError(what + ": '" + std::string(text) + "' is too large; a message may be at most " +
                     std::to_string(max) + " bytes (1 GiB)");
  }
  return v * unit;
}

inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto pos = s.find(sep);
    parts.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) return parts;
    s.remove_prefix(pos + 1);
  }
}

inline std::vector<std::uint64_t> parse_byte_list(const std::string& text, std::uint64_t max) {
  if (trim(text).empty()) throw UsageError("--bytes: the list is empty (write e.g. --bytes 16,1024,65536)");
  std::vector<std::uint64_t> sizes;
  for (std::string_view item : split(text, ',')) {
    if (trim(item).empty()) {
      throw UsageError("--bytes: '" + text + "' has an empty entry (write e.g. --bytes 16,1024,65536)");
    }
    sizes.push_back(parse_byte_count(item, "--bytes", max));
    if (sizes.back() == 0) {
      throw UsageError(
          "--bytes: 0 is not a message size: a matrix entry of 0 bytes means no message "
          "(write sizes from 1 byte, e.g. --bytes 16,1024,65536)");
    }
  }
  return sizes;
}

inline std::uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

inline std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  std::ostringstream s;
  s.precision(u ? 1 : 0);
  s << std::fixed << b << " " << units[u];
  return s.str();
}

// `what` needs `needed` bytes of buffers: more than half the machine's memory is refused up front.
inline void check_buffer_memory(double needed, const std::string& what) {
  const std::uint64_t memory = physical_memory();
  if (memory && needed > static_cast<double>(memory) / 2) {
    throw UsageError(what + " need " + human_bytes(needed) + " of buffers, more than half of this machine's " +
                     human_bytes(static_cast<double>(memory)) + " of memory");
  }
}

// A malformed matrix file is bad input; the reader's message says file:line.
inline schedulers::CommMatrix load_matrix(const std::string& path) {
  try {
    return schedulers::read_matrix_market_file(path);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--matrix: ") + e.what());
  }
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

// Runs a command and turns its errors into exit codes, the message on stderr:
// bad input 2, a stalled job (the message names every blocked process) or any
// other failure 1.
template <class Body>
int exit_code_of(Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << "switchyard: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const StallError& e) {
    std::cerr << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "switchyard: failed: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace switchyard::cli
