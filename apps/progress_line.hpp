#pragma once
// Progress of a long command: one line on stderr, rewritten in place, when
// stderr is a terminal, and nothing at all otherwise (a pipe or a file gets
// only the command's own messages). Redrawn at most every 100 ms; erased when
// the work ends, so that what the command prints next starts on a clean line.
//
//   ProgressLine progress("phases");
//   for (...) progress(done, total, "cgm samples");    // or pass progress.callback() to a library

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <switchyard/progress.hpp>

#include "cli_support.hpp"

namespace switchyard::cli {

class ProgressLine {
 public:
  explicit ProgressLine(std::string command)
      : command_(std::move(command)), on_(reports_here() && ::isatty(STDERR_FILENO) == 1) {}
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void operator()(std::uint64_t done, std::uint64_t total, std::string_view what = {}) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    const double percent = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
    // \r and erase-to-end-of-line: the line is rewritten in place.
    std::fprintf(stderr, "\r\033[Kswitchyard %s: %llu/%llu (%.0f%%) %.*s", command_.c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), percent,
                 static_cast<int>(what.size()), what.data());
    std::fflush(stderr);
  }
  Progress callback() {
    return [this](std::uint64_t done, std::uint64_t total, std::string_view what) { (*this)(done, total, what); };
  }
  void clear() {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  std::string command_;
  bool on_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace switchyard::cli
