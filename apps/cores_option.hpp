#pragma once
// --cores (exchange, topology): the runtime on the OS CPUs the command line names.

#include <memory>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <vector>

#include "cli_support.hpp"
#include "option_parsers.hpp"
#include "trace_option.hpp"

namespace switchyard::cli {

// The runtime on `cores_text`'s CPUs (empty: every usable one), recording
// traces if `trace` asks; a core the process may not use is bad input, not a failure.
// realtime_priority: --realtime-priority's value (0: not given).
inline std::unique_ptr<Runtime> make_runtime(const std::string& cores_text, const TraceOption* trace = nullptr,
                                             int realtime_priority = 0) {
  std::vector<int> cores = cores_text.empty() ? std::vector<int>{} : parse_core_list(cores_text);
  RuntimeOptions options = trace ? trace->runtime_options(std::move(cores)) : RuntimeOptions{.cores = std::move(cores)};
  options.realtime_priority = realtime_priority;
  try {
    return std::make_unique<Runtime>(std::move(options));
  } catch (const InvalidArgument& e) {
    const bool realtime = std::string(e.what()).find("realtime_priority") != std::string::npos;
    throw UsageError((realtime ? "--realtime-priority: " : "--cores: ") + without_library_prefix(e.what()));
  }
}

// Where a command's processes run, for its header: "4 core(s)" on one node,
// "2 nodes x 4 cores" across nodes (this node's cores; every node has its own).
inline std::string where_it_runs(const Runtime& rt) {
  const std::string cores = std::to_string(rt.cores().size());
  return rt.nodes() > 1 ? std::to_string(rt.nodes()) + " nodes x " + cores + " cores" : cores + " core(s)";
}

}  // namespace switchyard::cli
