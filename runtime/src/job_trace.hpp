#pragma once
// What Runtime::run does for a job's trace: picks the log (the job's own, the
// runtime's, or one made for RunOptions::trace_file, whose file is opened
// before the job so that a bad path fails before any work), holds it for the
// job, ends the spans a failed job left open, and writes the file.

#include <fstream>
#include <memory>
#include <mutex>

#include "switchyard/runtime.hpp"
#include "switchyard/trace.hpp"

namespace switchyard::detail {

class JobTrace {
 public:
  // Sets options.trace to the log the job records into (nullptr: none).
  JobTrace(RunOptions& options, TraceLog* runtime_default);
  // The job is over (its workers have left): open spans end now.
  void job_over();
  // RunOptions::trace_file: writes it.
  void write_file();

 private:
  TraceLog* log_ = nullptr;
  std::unique_ptr<TraceLog> own_;  // trace_file's log
  std::string path_;
  // trace_file's, opened before the job; made only then (a stream's
  // construction sets up its locale: thousands of instructions every job).
  std::unique_ptr<std::ofstream> file_;
  std::unique_lock<std::mutex> lock_;
};

}  // namespace switchyard::detail
