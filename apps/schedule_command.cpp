#include "schedule_command.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/schedule.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>

#include "cli_support.hpp"
#include "matrix_estimates.hpp"
#include "option_parsers.hpp"

namespace switchyard::cli {

namespace sys = switchyard::schedulers;

struct ScheduleCommand::Args {
  std::string matrix, scheduler, seed = "1", max_phases, out, max_work;
};

namespace {

int run_command(const ScheduleCommand::Args& a) {
  const std::string name = parse_static_scheduler(a.scheduler, "--scheduler");
  const std::uint64_t seed = parse_uint(a.seed, "--seed", 0, ~std::uint64_t{0});
  const sys::CommMatrix m = load_matrix(a.matrix);
  check_estimate(schedule_estimate(name, sys::MatrixShape::of(m), 1, false),
                 a.max_work.empty() ? kDefaultMaxWork : parse_max_work(a.max_work),
                 "schedule --scheduler " + name + " --matrix '" + a.matrix + "' (" + std::to_string(m.size()) +
                     " processes, " + std::to_string(m.messages()) + " messages)");
  OutputFile out("--out", a.out);
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t max_phases =
      a.max_phases.empty() ? 0 : parse_uint(a.max_phases, "--max-phases", 1, ~std::uint64_t{0});
  const sys::Schedule s = sys::make_schedule(name, m, sys::ScheduleOptions{seed, max_phases});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  sys::validate(s, m);

  // One line per phase: a schedule of thousands of transfers stays readable.
  std::string text = "{\"processes\": " + std::to_string(s.processes) +
                     ", \"scheduler\": " + nlohmann::json(name).dump() + ", \"seed\": " + std::to_string(seed) +
                     ", \"phases\": [";
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    nlohmann::ordered_json phase = nlohmann::ordered_json::array();
    for (const auto& t : s.phases[p]) {
      phase.push_back({{"src", t.src}, {"dst", t.dst}, {"offset", t.offset}, {"bytes", t.bytes}});
    }
    text += (p ? ",\n  " : "\n  ") + phase.dump();
  }
  text += s.phases.empty() ? "]}\n" : "\n]}\n";
  out.write(text);
  std::printf(
      "switchyard schedule: %s on %s: %zu phases, %llu transfers, %u processes (lower bound %llu phases), "
      "makespan %llu bytes (lower bound %llu), scheduled in %.3f ms, valid\nwrote %s\n",
      name.c_str(), a.matrix.c_str(), s.phases.size(), static_cast<unsigned long long>(s.transfers()), s.processes,
      static_cast<unsigned long long>(m.max_degree()), static_cast<unsigned long long>(s.makespan_bytes()),
      static_cast<unsigned long long>(m.max_load_bytes()), ms, out.path().c_str());
  return kExitOk;
}

}  // namespace

ScheduleCommand::ScheduleCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  Args& sc = *args_;
  auto* schedule = command_ =
      app.add_subcommand("schedule", "Schedule a Matrix Market matrix with a static scheduler and write it as JSON");
  schedule->add_option("--matrix", sc.matrix, "Matrix Market file (row = sender, column = receiver, value = bytes)")
      ->type_name("FILE")
      ->required();
  schedule->add_option("--scheduler", sc.scheduler, "Static scheduler: " + join(sys::static_scheduler_names(), ", "))
      ->type_name("NAME")
      ->required();
  schedule->add_option("--seed", sc.seed, "Scheduler seed")->type_name("S")->capture_default_str();
  schedule
      ->add_option("--max-phases", sc.max_phases,
                   "optimal-bytes: at most max(K, Δ) phases, trading makespan for fewer phases (default: no cap)")
      ->type_name("K");
  schedule->add_option("--out", sc.out, "Write the schedule as JSON to FILE")->type_name("FILE.json")->required();
  schedule->add_option("--max-work", sc.max_work, kMaxWorkHelp)->type_name("STEPS");
}

ScheduleCommand::~ScheduleCommand() = default;

int ScheduleCommand::run() const { return run_command(*args_); }

}  // namespace switchyard::cli
