#pragma once
// The JSON reports of the commands: one shape for a time's statistics, one way
// to write a report and say where it went.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <switchyard/schedulers/exchange.hpp>

#include "cli_support.hpp"

namespace switchyard::cli {

// {"median", "mean", "p90", "p99", "min", "max"} of a timing, in its unit (ms everywhere).
inline nlohmann::ordered_json time_json(const schedulers::TimeStats& t) {
  return {{"median", t.median}, {"mean", t.mean}, {"p90", t.p90}, {"p99", t.p99}, {"min", t.min}, {"max", t.max}};
}

// Writes the report, indented, and prints "wrote FILE".
inline void write_json_report(OutputFile& out, const nlohmann::ordered_json& report) {
  out.write(report.dump(2) + "\n");
  std::printf("wrote %s\n", out.path().c_str());
}

}  // namespace switchyard::cli
