#pragma once
// What the subcommands of the `switchyard` tool share: exit codes, the error
// for bad input, option-value parsing and output files.

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "switchyard/errors.hpp"
#include "switchyard/machine_memory.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"

namespace switchyard::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Under mpirun every node runs the command and node 0 alone reports:
// speak_on_this_node() (main, before the command runs) sends the other nodes'
// stdout to /dev/null, their errors still reaching stderr, and OutputFile
// writes nothing there.
inline bool& reports_here() {
  static bool here = true;
  return here;
}
inline void speak_on_this_node(bool here) {
  reports_here() = here;
  if (here) return;
  std::fflush(stdout);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
}

// Bad input: the message names the option and the offending value.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A library error's message without its "switchyard: " prefix, to follow an option's name.
inline std::string without_library_prefix(std::string_view what) {
  if (what.starts_with("switchyard: ")) what.remove_prefix(12);
  return std::string(what);
}

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

// `what` needs `needed` bytes: more than the machine allows a request
// (machine_memory.hpp) is refused up front.
inline void check_memory(double needed, const std::string& what) {
  if (const std::string why = memory_shortfall(needed); !why.empty()) throw UsageError(what + ": " + why);
}

// The default of --max-work: 10^11 steps is minutes at the 0.1-10 ns a step the
// schedulers take here (schedulers/static_schedulers.hpp: schedule_work); a
// bound that catches only requests of hours or more, such as LP on 10^6
// processes (10^12 steps), while every size of the papers and the tests stays far below it.
inline constexpr double kDefaultMaxWork = 1e11;
inline constexpr const char* kMaxWorkHelp =
    "Refuse a request estimated at more than STEPS elementary steps of work (default 1e11, minutes at most); "
    "raise it to run a longer one anyway";

// --max-work: a count of steps, as a whole number or in scientific notation (1e12).
inline double parse_max_work(std::string_view text) {
  const std::string_view s = trim(text);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !(v >= 1) || v > 1e30) {
    throw UsageError("--max-work: '" + std::string(text) + "' is not a number of steps between 1 and 1e30 (e.g. 1e12)");
  }
  return v;
}

// What a command will take, estimated from its inputs before any of it is built.
struct Estimate {
  double memory_bytes = 0;
  double work_steps = 0;
};

// Bookkeeping beside the messages' own bytes, set from the peak RSS of runs
// that fit (bench/README.md, "Memory refused up front"), with a margin of about
// 1.5 over the largest seen. A message of an exchange: its two buffers
// (cache-line aligned, so 64 bytes at least), the matrix and its copies, the
// plans and the schedules; DRS_N's records make it about twice AC's. A
// scheduled message of `phases` and `schedule`: the matrix, a schedule and its
// validation. A process of an exchange or a redistribution: its frame,
// mailbox, route and plans, and a redistribution's tables, about 10 KB with
// every scheduler or schedule kind.
inline constexpr double kBytesPerMessage = 1536;  // exchange, beyond its buffers
inline constexpr double kBufferAlignment = 64;  // each buffer rounds up to a cache line
inline constexpr double kBytesPerScheduledMessage = 192;  // phases, schedule
inline constexpr double kBytesPerProcess = 16384;

// Refuses, with the estimate, what needs more memory than the machine allows or
// more steps than `max_work`; `what` names the request ("exchange -n 60000 -d 60000").
inline void check_estimate(const Estimate& e, double max_work, const std::string& what) {
  std::string why = memory_shortfall(e.memory_bytes);
  if (e.work_steps > max_work) {
    char steps[96];
    std::snprintf(steps, sizeof steps, "about %.1e steps of work, more than --max-work %.3g allows", e.work_steps,
                  max_work);
    why += (why.empty() ? "needs " : " and ") + std::string(steps) + " (raise --max-work to run it anyway)";
  }
  if (!why.empty()) throw UsageError(what + ": " + why);
}

// A malformed matrix file is bad input; the reader's message says file:line.
inline schedulers::CommMatrix load_matrix(const std::string& path) {
  try {
    return schedulers::read_matrix_market_file(path);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--matrix: ") + e.what());
  }
}

// Checked before the command runs (created if need be, never truncated), written
// after. The check must catch what would fail only at the end of a long run: a
// file system with no free block, a device that refuses writes (/dev/full), a
// FIFO nobody reads.
class OutputFile {
 public:
  OutputFile(std::string option, std::string path) : option_(std::move(option)), path_(std::move(path)) {
    std::error_code ec;
    existed_ = std::filesystem::exists(path_, ec);
    if (std::filesystem::is_directory(path_, ec))
      throw UsageError(option_ + ": '" + printable(path_) + "' is a directory");
    if (existed_ && !std::filesystem::is_regular_file(path_, ec)) {
      probe_device();
    } else {
      probe_file();
    }
  }
  // Destroyed by an exception (the run failed): an empty file that was not
  // there before is not left behind. Every command gets this by scope alone.
  ~OutputFile() {
    if (std::uncaught_exceptions() <= exceptions_at_start_) return;
    std::error_code ec;
    if (!existed_ && std::filesystem::is_empty(path_, ec)) std::filesystem::remove(path_, ec);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void write(const std::string& text) {
    if (!reports_here()) return;
    std::ofstream out(path_, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error(option_ + ": writing '" + path_ + "' failed");
  }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void refuse(int error) const {
    throw UsageError(option_ + ": cannot write to '" + printable(path_) + "': " + std::strerror(error));
  }
  // A regular file: opened for appending (created if need be), and its file system has room.
  void probe_file() const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) refuse(errno);
    struct statfs fs {};
    const bool known = ::fstatfs(fd, &fs) == 0;
    ::close(fd);
    // No blocks at all: not a disk but the kernel's view (proc, sysfs), which
    // root may open and no report can be written to. ramfs alone stores files without counting blocks.
    if (known && fs.f_blocks == 0 && fs.f_type != RAMFS_MAGIC) {
      throw UsageError(option_ + ": cannot write to '" + printable(path_) +
                       "': it is on a file system without storage (like /proc or /sys), not a file for a report");
    }
    if (known && fs.f_bfree == 0) refuse(ENOSPC);
  }
  // A device or FIFO: one newline written (JSON and CSV readers skip it), without blocking.
  void probe_device() const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) refuse(errno == ENXIO ? EPIPE : errno);  // ENXIO: a FIFO without a reader
    const bool written = ::write(fd, "\n", 1) == 1 || errno == EAGAIN;
    const int error = errno;
    ::close(fd);
    if (!written) refuse(error);
  }

  std::string option_;
  std::string path_;
  bool existed_ = false;
  int exceptions_at_start_ = std::uncaught_exceptions();  // more at destruction: unwinding
};

// Runs a command's body and turns what it throws into the exit code, the
// message on stderr: bad input 2 (the command's own checks, and the library's
// refusal of an argument the command passed on, such as a ring too large for
// the machine), a stalled job or a failed run 1.
template <class Body>
int run_reporting_errors(Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << "switchyard: error: " << printable(e.what()) << "\n";
    return kExitUsage;
  } catch (const InvalidArgument& e) {
    std::cerr << "switchyard: error: " << printable(e.what()) << "\n";
    return kExitUsage;
  } catch (const StallError& e) {
    std::cerr << e.what() << "\n";  // "switchyard: job stalled: ...", one line per blocked process
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "switchyard: failed: " << printable(e.what()) << "\n";
    return kExitFailure;
  }
}

}  // namespace switchyard::cli
