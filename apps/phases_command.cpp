#include "phases_command.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <switchyard/schedulers/phase_statistics.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>

#include "cli_support.hpp"
#include "json_report.hpp"
#include "matrix_estimates.hpp"
#include "option_parsers.hpp"
#include "progress_line.hpp"

namespace switchyard::cli {

namespace sys = switchyard::schedulers;

struct PhasesCommand::Args {
  std::string processes, density, samples, scheduler, seed = "1", json, max_work;
};

namespace {

int run_command(const PhasesCommand::Args& a) {
  const std::uint64_t n = parse_uint(a.processes, "--processes", 1, kMaxProcesses);
  const std::uint64_t d = parse_uint(a.density, "--density", 0, kMaxProcesses);
  if (d > n) {
    throw UsageError("--density: " + std::to_string(d) + " messages per process is more than the " + std::to_string(n) +
                     " processes (it must be between 0 and " + std::to_string(n) + ")");
  }
  const std::uint64_t samples = parse_uint(a.samples, "--samples", 1, 1'000'000);
  const std::string name = parse_static_scheduler(a.scheduler, "--scheduler");
  const std::uint64_t seed = parse_uint(a.seed, "--seed", 0, ~std::uint64_t{0});
  check_estimate(schedule_estimate(name, sys::MatrixShape{n, n * d, d, 1, d > 0}, static_cast<double>(samples), true),
                 a.max_work.empty() ? kDefaultMaxWork : parse_max_work(a.max_work),
                 "phases --scheduler " + name + " --processes " + std::to_string(n) + " --density " +
                     std::to_string(d) + " --samples " + std::to_string(samples));
  std::optional<OutputFile> json;
  if (!a.json.empty()) json.emplace("--json", a.json);

  ProgressLine progress("phases");
  const sys::PhaseStatistics st = sys::phase_statistics(name, static_cast<Rank>(n), static_cast<Rank>(d),
                                                        static_cast<std::uint32_t>(samples), seed, progress.callback());
  progress.clear();
  std::printf("switchyard phases: %s on %llu Fig. 7 matrices, %llu processes, density %llu, seed %llu\n", name.c_str(),
              static_cast<unsigned long long>(samples), static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(d), static_cast<unsigned long long>(seed));
  std::printf("phases: avg %.2f, min %llu, max %llu (every schedule needs at least %llu)\n", st.avg,
              static_cast<unsigned long long>(st.min), static_cast<unsigned long long>(st.max),
              static_cast<unsigned long long>(d));
  std::printf("scheduling time: %.3f ms avg, on one thread\n", st.schedule_ms_avg);
  if (json) {
    nlohmann::ordered_json j;
    j["scheduler"] = name;
    j["processes"] = n;
    j["density"] = d;
    j["samples"] = samples;
    j["seed"] = seed;
    j["phases"] = {{"avg", st.avg}, {"min", st.min}, {"max", st.max}};
    j["schedule_ms"] = {{"avg", st.schedule_ms_avg}};
    write_json_report(*json, j);
  }
  return kExitOk;
}

}  // namespace

PhasesCommand::PhasesCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  Args& ph = *args_;
  auto* phases = command_ = app.add_subcommand(
      "phases", "Phases and scheduling time of a static scheduler over random Fig. 7 matrices (Table 4's perm, comp)");
  phases->add_option("--processes,-n", ph.processes, "Number of processes")->type_name("N")->required();
  phases->add_option("--density,-d", ph.density, "Messages per row and column, at most N")->type_name("D")->required();
  phases->add_option("--samples", ph.samples, "Random matrices to schedule")->type_name("S")->required();
  phases->add_option("--scheduler", ph.scheduler, "Static scheduler: " + join(sys::static_scheduler_names(), ", "))
      ->type_name("NAME")
      ->required();
  phases->add_option("--seed", ph.seed, "Seed of the matrices and the scheduler")
      ->type_name("S")
      ->capture_default_str();
  phases->add_option("--json", ph.json, "Also write the statistics as JSON to FILE")->type_name("FILE");
  phases->add_option("--max-work", ph.max_work, kMaxWorkHelp)->type_name("STEPS");
}

PhasesCommand::~PhasesCommand() = default;

int PhasesCommand::run() const { return run_command(*args_); }

}  // namespace switchyard::cli
