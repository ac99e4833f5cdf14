#include "redistribute_command.hpp"

#include "cli_support.hpp"
#include "cores_option.hpp"
#include "json_report.hpp"
#include "progress_line.hpp"
#include "trace_option.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <switchyard/schedulers/redistribution/redistribution_plan.hpp>
#include <vector>

namespace switchyard::cli {

namespace rd = switchyard::schedulers::redistribution;

struct RedistributeCommand::Args {
  std::string extent, from, to, schedule = "all", repeat = "5", json, dump_tables;
  TraceOption trace;
};

namespace {

rd::Layout parse_layout(const std::vector<rd::Index>& extent, const std::string& extent_text, const std::string& text,
                        const std::string& option) {
  rd::Distribution d;
  try {
    d = rd::Distribution::parse(text);
  } catch (const InvalidArgument& e) {
    throw UsageError(option + " " + e.what());
  }
  if (d.dims.size() != extent.size()) {
    throw UsageError(option + " '" + text + "': " + std::to_string(d.dims.size()) +
                     " distributed dimension(s) for the " + std::to_string(extent.size()) + "-dimensional --extent " +
                     extent_text + " (give one distribution and one grid axis per array dimension)");
  }
  try {
    return rd::Layout(extent, std::move(d));
  } catch (const InvalidArgument& e) {
    throw UsageError(option + " '" + text + "': " + without_library_prefix(e.what()));
  }
}

std::vector<rd::ScheduleKind> parse_kinds(const std::string& text) {
  if (text == "all") return rd::all_schedule_kinds();
  if (const auto kind = rd::parse_schedule_kind(text)) return {*kind};
  std::string valid;
  for (rd::ScheduleKind k : rd::all_schedule_kinds()) valid += std::string(rd::name(k)) + ", ";
  throw UsageError("--schedule: unknown schedule '" + text + "' (valid: " + valid + "all)");
}

// The global array, the sources' blocks, the targets' blocks as they should
// end up, and the blocks the redistribution writes: about five copies of the
// array; COM and the communication matrix made of it (sources x targets
// entries of 8 bytes each, and the plan's pieces per pair); and the job's
// processes. More than the machine allows is refused up front.
void check_redistribution_memory(const rd::Layout& src, const rd::Layout& dst, const std::string& what) {
  const double pairs = static_cast<double>(src.processes()) * static_cast<double>(dst.processes());
  const double needed = 5.0 * static_cast<double>(src.elements()) * sizeof(double) + pairs * (2 * 8 + 24) +
                        static_cast<double>(std::max(src.processes(), dst.processes())) * kBytesPerProcess;
  check_memory(needed, what + ": " + std::to_string(src.elements()) + " elements over " +
                           std::to_string(src.processes()) + " sources and " + std::to_string(dst.processes()) +
                           " targets");
}

struct Result {
  rd::ScheduleKind kind;
  std::optional<rd::RedistributionPlan> plan;  // none: the table kind does not apply
  std::string reason;
  schedulers::TimeStats ms;
};

// The receiving table: a source, -1 for an idle slot, or the list of sources
// where a schedule with contention has a target receive several in one step.
nlohmann::json receiving_cell(const std::vector<Rank>& sources) {
  if (sources.empty()) return -1;
  if (sources.size() == 1) return sources[0];
  return sources;
}

// A table as JSON, one row per line.
std::string rows_json(const std::vector<nlohmann::json>& rows, const char* indent) {
  std::string s = "[";
  for (std::size_t r = 0; r < rows.size(); ++r) s += (r ? ",\n" : "\n") + std::string(indent) + "  " + rows[r].dump();
  return s + (rows.empty() ? "]" : "\n" + std::string(indent) + "]");
}

std::vector<nlohmann::json> sending_rows(const rd::SchedulingTable& cs) {
  std::vector<nlohmann::json> rows;
  for (Rank i = 0; i < cs.rows(); ++i) rows.emplace_back(cs.row(i));
  return rows;
}

std::vector<nlohmann::json> receiving_rows(const rd::RedistributionPlan& plan) {
  std::vector<nlohmann::json> rows;
  for (const auto& row : rd::receiving_lists(plan.schedule(), plan.target().processes())) {
    nlohmann::json r = nlohmann::json::array();
    for (const auto& cell : row) r.push_back(receiving_cell(cell));
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string tables_json(const std::vector<Result>& results, const rd::CommTable& com, const rd::Layout& src,
                        const rd::Layout& dst) {
  std::vector<nlohmann::json> pattern, elements;
  for (Rank i = 0; i < com.sources(); ++i) {
    nlohmann::json p = nlohmann::json::array(), e = nlohmann::json::array();
    for (Rank j = 0; j < com.targets(); ++j) {
      p.push_back(com.communicates(i, j) ? 1 : 0);
      e.push_back(com.elements(i, j));
    }
    pattern.push_back(std::move(p));
    elements.push_back(std::move(e));
  }
  // The top-level tables: the one kind asked for, or with `all` the paper's
  // table (the optimal one where the paper's method does not apply).
  const Result* primary = nullptr;
  for (rd::ScheduleKind k : {rd::ScheduleKind::table, rd::ScheduleKind::optimal}) {
    for (const Result& r : results) {
      if (!primary && r.kind == k && r.plan) primary = &r;
    }
  }
  if (!primary) primary = &results.front();
  std::string s = "{\"from\": " + nlohmann::json(src.distribution().str()).dump() +
                  ", \"to\": " + nlohmann::json(dst.distribution().str()).dump() +
                  ", \"extent\": " + nlohmann::json(src.extent()).dump() + ",\n";
  s += " \"com\": " + rows_json(pattern, " ") + ",\n \"com_elements\": " + rows_json(elements, " ") + ",\n";
  s += " \"schedule\": " + nlohmann::json(std::string(rd::name(primary->kind))).dump() +
       ", \"steps\": " + std::to_string(primary->plan->steps()) + ",\n";
  s += " \"cs\": " + rows_json(sending_rows(primary->plan->cs()), " ") + ",\n";
  s += " \"cs_recv\": " + rows_json(receiving_rows(*primary->plan), " ") + ",\n";
  s += " \"schedules\": {";
  bool first = true;
  for (const Result& r : results) {
    if (!r.plan) continue;
    s += std::string(first ? "\n" : ",\n") + "  " + nlohmann::json(std::string(rd::name(r.kind))).dump() +
         ": {\"steps\": " + std::to_string(r.plan->steps()) +
         ", \"contention_free\": " + (r.plan->contention_free() ? "true" : "false") +
         ",\n   \"cs\": " + rows_json(sending_rows(r.plan->cs()), "   ") +
         ",\n   \"cs_recv\": " + rows_json(receiving_rows(*r.plan), "   ") + "}";
    first = false;
  }
  return s + (first ? "}}\n" : "\n }}\n");
}

// Each kind's plan; a table that does not apply is bad input when it was the
// one asked for, and a row saying why otherwise.
std::vector<Result> plan_each(const rd::Layout& src, const rd::Layout& dst,
                              const std::vector<rd::ScheduleKind>& kinds) {
  std::vector<Result> results;
  for (rd::ScheduleKind kind : kinds) {
    Result r{kind, std::nullopt, "", {}};
    try {
      r.plan.emplace(src, dst, kind);
    } catch (const rd::TableNotApplicable& e) {
      if (kinds.size() == 1) throw UsageError("--schedule table: " + without_library_prefix(e.what()));
      r.reason = without_library_prefix(e.what());
    }
    results.push_back(std::move(r));
  }
  return results;
}

// Runs each plan `repeat` times on rt, every element of every repetition checked.
void run_each(Runtime& rt, const rd::Layout& src, const rd::Layout& dst, std::uint32_t repeat,
              std::vector<Result>& results) {
  // The array holds its row-major offsets, exactly representable as doubles.
  std::vector<double> global(static_cast<std::size_t>(src.elements()));
  for (std::size_t e = 0; e < global.size(); ++e) global[e] = static_cast<double>(e);
  const auto in = src.scatter(global);
  const auto want = dst.scatter(global);
  std::vector<std::vector<double>> out(dst.processes());
  const std::vector<std::span<const double>> in_views(in.begin(), in.end());
  ProgressLine progress("redistribute");
  std::uint64_t done = 0;
  for (Result& r : results) {
    if (!r.plan) continue;
    std::vector<double> samples;
    for (std::uint32_t rep = 0; rep < repeat; ++rep) {
      progress(done++, results.size() * repeat, rd::name(r.kind));
      for (Rank j = 0; j < out.size(); ++j) out[j].assign(want[j].size(), std::numeric_limits<double>::quiet_NaN());
      const std::vector<std::span<double>> out_views(out.begin(), out.end());
      samples.push_back(r.plan->execute(rt, in_views, out_views));
      // Each node checks the targets it hosts; every node fails if one found a wrong element.
      const RankRange mine = rt.local_ranks(r.plan->processes());
      std::string wrong;
      for (auto j = static_cast<Rank>(mine.first); j < std::min<std::uint64_t>(mine.end, out.size()) && wrong.empty();
           ++j) {
        const auto bad = std::mismatch(out[j].begin(), out[j].end(), want[j].begin());
        if (bad.first != out[j].end()) {
          wrong = "target " + std::to_string(j) + "'s local element " + std::to_string(bad.first - out[j].begin()) +
                  " is " + std::to_string(*bad.first) + ", expected " + std::to_string(*bad.second);
        }
      }
      const std::int64_t found = wrong.empty() ? 0 : 1;
      if (rt.sum_over_nodes({&found, 1}).front() > 0) {
        throw std::runtime_error("schedule " + std::string(rd::name(r.kind)) + ", repetition " +
                                 std::to_string(rep + 1) + ": " +
                                 (wrong.empty() ? std::string("another node found a wrong element") : wrong));
      }
    }
    r.ms = schedulers::summarize(std::move(samples));
  }
  progress.clear();
}

void print_results(const std::vector<Result>& results, std::uint32_t repeat) {
  std::printf("%-14s %6s  %-15s %10s %15s %10s %10s %10s %10s  %s\n", "schedule", "steps", "contention-free",
              "plan (ms)", "redist. (ms)", "mean", "p90", "p99", "max", "how");
  for (const Result& r : results) {
    if (!r.plan) {
      std::printf("%-14s %6s  %-15s %10s %15s %10s %10s %10s %10s  %s\n", std::string(rd::name(r.kind)).c_str(), "n/a",
                  "", "", "", "", "", "", "", r.reason.c_str());
      continue;
    }
    std::printf("%-14s %6u  %-15s %10.3f %15.3f %10.3f %10.3f %10.3f %10.3f  %s\n",
                std::string(rd::name(r.kind)).c_str(), r.plan->steps(), r.plan->contention_free() ? "yes" : "no",
                r.plan->timings().total_ms(), r.ms.median, r.ms.mean, r.ms.p90, r.ms.p99, r.ms.max,
                r.plan->method().c_str());
  }
  std::printf(
      "every element of every repetition verified: yes\n"
      "plan: COM from LDD intersections, the schedule, the pack/unpack descriptors (one thread);\n"
      "redist.: median of %u (then their mean, p90, p99, max), from the first process leaving a barrier to the last "
      "one done\n",
      repeat);
}

nlohmann::ordered_json results_json(const std::vector<rd::Index>& extent, const rd::Layout& src, const rd::Layout& dst,
                                    const rd::CommTable& com, std::size_t cores, std::uint32_t repeat,
                                    const std::vector<Result>& results) {
  nlohmann::ordered_json j;
  j["extent"] = extent;
  j["from"] = src.distribution().str();
  j["to"] = dst.distribution().str();
  j["processes"] = rd::job_processes(com);
  j["sources"] = src.processes();
  j["targets"] = dst.processes();
  j["cores"] = cores;
  j["repeat"] = repeat;
  j["K"] = com.max_sends();
  j["K_prime"] = com.max_receives();
  j["messages"] = com.messages();
  j["results"] = nlohmann::ordered_json::array();
  for (const Result& r : results) {
    nlohmann::ordered_json row;
    row["schedule"] = std::string(rd::name(r.kind));
    row["available"] = r.plan.has_value();
    if (!r.plan) {
      row["reason"] = r.reason;
    } else {
      const rd::PlanTimings& t = r.plan->timings();
      row["steps"] = r.plan->steps();
      row["contention_free"] = r.plan->contention_free();
      row["method"] = r.plan->method();
      row["plan_ms"] = {
          {"total", t.total_ms()}, {"com", t.com_ms}, {"schedule", t.schedule_ms}, {"descriptors", t.descriptors_ms}};
      row["redistribute_ms"] = time_json(r.ms);
      row["samples_ms"] = r.ms.samples;
      row["verified"] = true;
    }
    j["results"].push_back(std::move(row));
  }
  return j;
}

int run_command(const std::string& extent_text, const std::string& from, const std::string& to,
                const std::string& schedule, const std::string& repeat_text, const std::string& json_path,
                const std::string& dump_path, const TraceOption& trace) {
  std::vector<rd::Index> extent;
  try {
    extent = rd::parse_extent(extent_text);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--extent ") + e.what());
  }
  const rd::Layout src = parse_layout(extent, extent_text, from, "--from");
  const rd::Layout dst = parse_layout(extent, extent_text, to, "--to");
  const std::vector<rd::ScheduleKind> kinds = parse_kinds(schedule);
  const auto repeat = static_cast<std::uint32_t>(parse_uint(repeat_text, "--repeat", 1, 1'000'000));
  check_redistribution_memory(src, dst, "--extent " + extent_text + " --from " + from + " --to " + to);
  std::optional<OutputFile> json, dump;
  if (!json_path.empty()) json.emplace("--json", json_path);
  if (!dump_path.empty()) dump.emplace("--dump-tables", dump_path);

  const rd::CommTable com = [&] {
    try {
      rd::CommTable c = rd::communication_table(src, dst);
      rd::check_tables_fit(c, kinds.size());  // every plan is kept until the report
      return c;
    } catch (const InvalidArgument& e) {
      throw UsageError("--from " + from + " --to " + to + ": " + without_library_prefix(e.what()));
    }
  }();
  // Planning first: a table that does not apply is bad input when it was the one asked for.
  std::vector<Result> results = plan_each(src, dst, kinds);
  const Rank processes = rd::job_processes(com);
  Runtime rt(trace.runtime_options());
  std::printf("switchyard redistribute: %s elements, %s -> %s, %u processes on %s, %u repetition(s)\n",
              extent_text.c_str(), src.distribution().str().c_str(), dst.distribution().str().c_str(), processes,
              where_it_runs(rt).c_str(), repeat);
  std::printf(
      "COM: %llu messages; a source sends to at most K = %u targets, a target receives from at most K' = %u\n\n",
      static_cast<unsigned long long>(com.messages()), com.max_sends(), com.max_receives());
  std::fflush(stdout);

  run_each(rt, src, dst, repeat, results);

  print_results(results, repeat);

  if (json) {
    write_json_report(*json, results_json(extent, src, dst, com, rt.cores().size(), repeat, results));
  }
  if (dump) {
    dump->write(tables_json(results, com, src, dst));
    std::printf("wrote %s\n", dump->path().c_str());
  }
  trace.write();
  return kExitOk;
}

}  // namespace

RedistributeCommand::RedistributeCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  command_ = app.add_subcommand(
      "redistribute",
      "Redistribute a block-cyclic array of doubles between process grids with each schedule kind "
      "(Guo-Nakata-Yamashita's contention-free tables, their naive and offset baselines, the optimal schedulers), "
      "check every element, and print steps, planning and redistribution times");
  command_->add_option("--extent", args_->extent, "Array extents, e.g. 120000 or 1000x1000")
      ->type_name("N[xN...]")
      ->required();
  command_
      ->add_option("--from", args_->from,
                   "Source distribution and process grid, HPF style: e.g. 'cyclic(6)@4' or 'block,cyclic(2)@2x4'")
      ->type_name("DIST@GRID")
      ->required();
  command_->add_option("--to", args_->to, "Target distribution and process grid, same syntax")
      ->type_name("DIST@GRID")
      ->required();
  command_
      ->add_option("--schedule", args_->schedule,
                   "naive (Fig. 1), offset (Fig. 4), table (Algorithm 1 / 2), optimal, optimal-bytes, or all")
      ->type_name("KIND")
      ->capture_default_str();
  command_->add_option("--repeat,-r", args_->repeat, "Timed redistributions per schedule (the median is reported)")
      ->type_name("K")
      ->capture_default_str();
  command_->add_option("--json", args_->json, "Also write the results as JSON to FILE")->type_name("FILE");
  args_->trace.add_to(*command_);
  command_
      ->add_option("--dump-tables", args_->dump_tables,
                   "Write COM and the sending and receiving tables CS, CS' (-1: idle) as JSON to FILE")
      ->type_name("FILE");
}

RedistributeCommand::~RedistributeCommand() = default;

int RedistributeCommand::run() const {
  return run_command(args_->extent, args_->from, args_->to, args_->schedule, args_->repeat, args_->json,
                     args_->dump_tables, args_->trace);
}

}  // namespace switchyard::cli
