#pragma once
// --trace FILE, for every command that runs jobs: each job the command runs is
// recorded into one trace (switchyard/trace.hpp), written when the command
// ends, and also when it fails: a stalled job's trace shows where every
// process waits. A FILE that cannot be written is bad input (exit 2) before
// anything runs, probed as every output file is (OutputFile).
//
//   args.trace.add_to(*command);                       // with the command's options
//   Runtime rt(args.trace.runtime_options(cores));     // in its run: every job recorded
//   ...
//   args.trace.write();                                // at the end of its run

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <switchyard/runtime.hpp>
#include <switchyard/trace.hpp>
#include <vector>

#include "cli_support.hpp"

namespace switchyard::cli {

class TraceOption {
 public:
  TraceOption() = default;
  TraceOption(const TraceOption&) = delete;
  TraceOption& operator=(const TraceOption&) = delete;
  // A run that failed: what was recorded is written all the same.
  ~TraceOption() {
    if (!log_ || written_) return;
    try {
      write();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "switchyard: %s\n", e.what());
    }
  }

  void add_to(CLI::App& command) {
    command
        .add_option("--trace", path_,
                    "Record every job into FILE, a Chrome trace-event JSON file (open it in ui.perfetto.dev or "
                    "chrome://tracing): a track per process, grouped by core")
        ->type_name("FILE");
  }

  // The log the command's jobs record into, or nullptr without --trace.
  TraceLog* log() const {
    if (path_.empty()) return nullptr;
    if (!log_) {
      file_.emplace("--trace", path_);
      log_ = std::make_unique<TraceLog>();
    }
    return log_.get();
  }
  RuntimeOptions runtime_options(std::vector<int> cores = {}) const {
    return RuntimeOptions{.cores = std::move(cores), .trace = log()};
  }

  void write() const {
    if (!log_) return;
    written_ = true;
    std::ostringstream out;
    log_->write(out);
    file_->write(out.str());
    std::printf("wrote trace %s (%llu events)\n", file_->path().c_str(),
                static_cast<unsigned long long>(log_->events()));
    if (log_->dropped() > 0) {
      std::fprintf(stderr,
                   "switchyard: trace: %llu events dropped, their cores' buffers (%zu events each) being full: "
                   "the trace holds the beginning of the run (fewer --repeat, sizes or schedulers record all of it)\n",
                   static_cast<unsigned long long>(log_->dropped()), TraceLog::kDefaultEventsPerCore);
    }
  }

 private:
  std::string path_;
  mutable std::optional<OutputFile> file_;
  mutable std::unique_ptr<TraceLog> log_;
  mutable bool written_ = false;
};

}  // namespace switchyard::cli
