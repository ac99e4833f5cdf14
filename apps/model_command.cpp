#include "model_command.hpp"

#include "cli_support.hpp"
#include "option_parsers.hpp"
#include "progress_line.hpp"
#include "trace_option.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/median.hpp>
#include <switchyard/model/algorithms.hpp>
#include <switchyard/model/calibration/calibration.hpp>
#include <switchyard/model/calibration/host_state.hpp>
#include <switchyard/model/cost.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/auto_scheduler.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <thread>
#include <vector>

namespace switchyard::cli {

namespace sm = switchyard::model;
namespace smc = switchyard::model::calibration;
namespace sys = switchyard::schedulers;

struct ModelCommand::Args {
  std::string out = "machine.json", repeat = std::to_string(model::calibration::CalibrationOptions{}.repetitions);
  std::string op, processes, bytes, matrix, machine, variant, root = "0";
  std::string probe_rounds = "7", probe_repeat = "5", probe_pause = "0";
  TraceOption trace;  // calibrate's jobs
};

namespace {

// The descriptions of all-to-all hold p^2 pieces per superstep.
constexpr std::uint64_t kMaxProcesses = 4096;

struct Row {
  std::string name;
  double communication = 0, computation = 0;
  std::uint64_t supersteps = 0;
  double correction = 1;  // exchange: the machine file's measured / predicted
  double predicted_us = 0;
  double total() const { return communication + computation; }
};

sm::MachineFile machine_of(const ModelCommand::Args& a) {
  sm::MachineFile f = a.machine.empty() ? sm::default_machine_file() : read_machine_option(a.machine);
  f.core = machine_for(f, a.variant, f.core.processes);
  return f;
}

std::vector<Row> collective_rows(sm::Operation op, const sm::Machine& machine, sm::ProcessId p, std::uint64_t L,
                                 sm::ProcessId root) {
  std::vector<Row> rows;
  for (const std::string& name : sm::algorithm_names(op)) {
    const sm::Algorithm a = sm::supersteps(op, name, p, L, root);
    const sm::AlgorithmCost c = sm::cost(machine, a);
    rows.push_back({name, c.communication, c.computation, a.size(), 1,
                    (c.communication + c.computation) * machine.unit_ns / 1000});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.total() < y.total(); });
  return rows;
}

std::vector<Row> exchange_rows(const sys::CommMatrix& m, const sm::MachineFile& machine) {
  std::vector<Row> rows;
  for (const sys::SchedulerPrediction& s : sys::predict_exchange(m, machine))
    rows.push_back({s.scheduler, s.communication, s.computation, s.supersteps, s.correction, s.predicted_ms * 1000});
  return rows;
}

sys::CommMatrix all_to_all_matrix(Rank p, std::uint64_t L) {
  sys::CommMatrix m(p);
  for (Rank i = 0; i < p; ++i)
    for (Rank j = 0; j < p; ++j)
      if (i != j) m.set(i, j, L);
  return m;
}

int predict(const ModelCommand::Args& a) {
  sm::Operation op{};
  const bool exchange = a.op == "exchange";
  if (!exchange) {
    try {
      op = sm::parse_operation(a.op);
    } catch (const std::invalid_argument&) {
      throw UsageError("--op: '" + a.op +
                       "' is not an operation (valid: one-to-all, all-to-one, all-to-all, exchange)");
    }
  }
  sm::MachineFile file = machine_of(a);
  sm::Machine& machine = file.core;
  std::vector<Row> rows;
  std::string what;
  if (exchange && !a.matrix.empty()) {
    const sys::CommMatrix m = load_matrix(a.matrix);
    if (m.size() > kMaxProcesses)
      throw UsageError("--matrix " + a.matrix + ": " + std::to_string(m.size()) + " processes; at most " +
                       std::to_string(kMaxProcesses));
    what = "exchange of " + a.matrix + " (" + std::to_string(m.size()) + " processes, " + std::to_string(m.messages()) +
           " messages)";
    rows = exchange_rows(m, file);
  } else {
    if (a.processes.empty()) throw UsageError("--processes is required (or --matrix FILE with --op exchange)");
    if (a.bytes.empty()) throw UsageError("--bytes is required (or --matrix FILE with --op exchange)");
    if (!a.matrix.empty()) throw UsageError("--matrix: only with --op exchange");
    const auto p = static_cast<sm::ProcessId>(parse_uint(a.processes, "--processes", 1, kMaxProcesses));
    const std::uint64_t L = parse_byte_count(a.bytes, "--bytes", std::uint64_t{1} << 30);
    const auto root = static_cast<sm::ProcessId>(parse_uint(a.root, "--root", 0, p - 1));
    machine = machine_for(file, "", p);
    what = std::string(exchange ? "exchange (all-to-all matrix)" : sm::operation_name(op)) + ", " + std::to_string(p) +
           " processes, " + std::to_string(L) + " bytes per message";
    rows = exchange ? exchange_rows(all_to_all_matrix(p, L), file) : collective_rows(op, machine, p, L, root);
  }
  std::printf(
      "model predict: %s\nmachine: %s, %s model, l = %llu B, s = %.3g, h = %.3g, b = %.3g units, "
      "unit = %.3g ns, %u core(s)\n\n",
      what.c_str(), machine.name.c_str(), std::string(sm::model_variant_name(machine.variant)).c_str(),
      static_cast<unsigned long long>(machine.packet_bytes), machine.setup, machine.latency, machine.bisection,
      machine.unit_ns, machine.cores);
  std::printf("  %-22s %14s %12s %14s %10s %10s %12s\n", "algorithm", "comm units", "comp units", "total units",
              "supersteps", "measured/", "predicted us");
  std::printf("  %-22s %14s %12s %14s %10s %10s\n", "", "", "", "", "", "predicted");
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    std::printf("%s %-22s %14.1f %12.1f %14.1f %10llu %10.2f %12.2f\n", k == 0 ? "*" : " ", r.name.c_str(),
                r.communication, r.computation, r.total(), static_cast<unsigned long long>(r.supersteps), r.correction,
                r.predicted_us);
  }
  std::printf("\n* chosen: %s (least predicted time)\n", rows.front().name.c_str());
  return kExitOk;
}

int calibrate(const ModelCommand::Args& a) {
  OutputFile out("--out", a.out);
  smc::CalibrationOptions options;
  options.repetitions = static_cast<std::uint32_t>(parse_uint(a.repeat, "--repeat", 1, 10000));
  Runtime rt(a.trace.runtime_options());
  ProgressLine progress("model calibrate");
  options.progress = progress.callback();
  const sm::MachineFile f = smc::calibrate(rt, options);
  progress.clear();
  out.write(sm::to_json(f));
  if (f.colocated)
    std::fprintf(stderr,
                 "model calibrate: warning: the two cores measured as co-located (sibling hardware threads?) in all "
                 "%u rounds of %.0f attempts: a cross-core 8-byte hand-off took %.0f ns against %.0f ns on one core. "
                 "%s describes that state (\"colocated\": true); calibrate again later for the normal one\n",
                 options.rounds, f.measured.at("attempts"), f.measured.at("one_way_8B_ns"),
                 f.measured.at("same_core_one_way_8B_ns"), a.out.c_str());
  if (f.measured.at("exchange_probes_in_other_state") > 0)
    std::fprintf(stderr,
                 "model calibrate: warning: the cores changed state around the exchange corrections in all %.0f "
                 "attempts; their ratios in %s may not describe the %s state\n",
                 f.measured.at("exchange_attempts"), a.out.c_str(), f.colocated ? "co-located" : "normal");
  const sm::Machine& m = f.core;
  char rounds_kept[128];
  if (f.colocated)
    std::snprintf(rounds_kept, sizeof rounds_kept,
                  "all co-located, kept: the file describes that state; %.0f slow, left out",
                  f.measured.at("slow_rounds"));
  else
    std::snprintf(rounds_kept, sizeof rounds_kept, "%.0f co-located and %.0f slow, left out",
                  f.measured.at("colocated_rounds"), f.measured.at("slow_rounds"));
  std::printf(
      "model calibrate: %u core(s), %u runs of each figure in %u interleaved rounds (%s)\n"
      "  packet l     %llu B (a cache line)\n  unit         %.3f ns (one core copying one packet)\n"
      "  set-up s     %.2f units\n  latency h    %.2f units\n  bisection b  %.2f packets per unit\n"
      "  ring-sync (units): wake w %.2f, match m %.3f per entry (%.3f in cache),\n"
      "    coherence x %.2f per packed rendezvous message of %.0f packets (the smallest), + %.3f per packet "
      "beyond;\n"
      "    beyond a core's %llu KiB private cache, %.3f of it to another core, %.3f to the same one;\n"
      "    packing %.2f per piece copied\n"
      "wrote %s\n",
      m.cores, static_cast<unsigned>(f.measured.at("runs")), options.rounds, rounds_kept,
      static_cast<unsigned long long>(m.packet_bytes), m.unit_ns, m.setup, m.latency, m.bisection, m.wake, m.match,
      m.match_in_cache, m.coherence, m.smallest_rendezvous_packets(), m.coherence_per_packet,
      static_cast<unsigned long long>(m.private_cache_bytes / 1024), m.coherence_beyond_cache,
      m.coherence_beyond_cache_same_core, m.pack_piece, a.out.c_str());
  const auto round_trip = f.measured.find("host_line_round_trip_ns");
  std::printf(
      "the host meanwhile (model/host_state.hpp):\n"
      "  private copy %.3f ns a line, beyond-cache gather %.2f ns a piece, cross-core line round trip %s\n",
      f.measured.at("host_private_copy_ns"), f.measured.at("host_gather_ns"),
      round_trip == f.measured.end() ? "- (one core)"
                                     : (std::to_string(std::lround(round_trip->second)) + " ns").c_str());
  a.trace.write();
  return kExitOk;
}

// The host's state (model/host_state.hpp) of one round: each figure's median
// over the round's runs.
struct HostStateRound {
  double copy_ns = 0, gather_ns = 0, round_trip_ns = 0;  // round_trip_ns 0: one core
};

HostStateRound host_state_round(const Runtime& rt, std::uint32_t runs) {
  const smc::CalibrationCores cores = smc::calibration_cores(rt);
  const smc::HostStateSamples h = smc::sample_host_state(rt.topology(), cores.a, cores.b, runs);
  return {median(h.private_copy_ns_per_line), median(h.gather_ns_per_piece),
          h.line_round_trip_ns.empty() ? 0 : median(h.line_round_trip_ns)};
}

// Each figure's median over the rounds, and its largest over its smallest.
void print_host_state_spread(const std::vector<HostStateRound>& rounds) {
  const auto spread = [&](const char* name, double HostStateRound::*field, const char* unit) {
    std::vector<double> v;
    for (const HostStateRound& r : rounds) v.push_back(r.*field);
    const auto [low, high] = std::minmax_element(v.begin(), v.end());
    if (*low > 0)
      std::printf("  %-28s median %7.2f %s, largest / smallest %.2f\n", name, median(v), unit, *high / *low);
  };
  std::printf("the host's state over the rounds (model/host_state.hpp):\n");
  spread("private copy", &HostStateRound::copy_ns, "ns a line");
  spread("beyond-cache gather", &HostStateRound::gather_ns, "ns a piece");
  spread("cross-core line round trip", &HostStateRound::round_trip_ns, "ns");
}

int probe(const ModelCommand::Args& a) {
  const auto rounds = static_cast<std::uint32_t>(parse_uint(a.probe_rounds, "--rounds", 1, 100000));
  const auto runs = static_cast<std::uint32_t>(parse_uint(a.probe_repeat, "--repeat", 1, 10000));
  const auto pause = std::chrono::milliseconds(parse_uint(a.probe_pause, "--pause", 0, 3600 * 1000));
  Runtime rt;
  std::vector<HostStateRound> host;
  std::vector<double> cross, same;
  std::vector<bool> colocated;  // each round judged on its own hand-offs
  for (std::uint32_t r = 0; r < rounds; ++r) {
    if (r > 0) std::this_thread::sleep_for(pause);
    const smc::ColocationProbe p = smc::probe_colocation(rt, 1, runs);
    cross.push_back(p.cross_core_one_way_ns.front());
    same.push_back(p.same_core_one_way_ns.front());
    colocated.push_back(p.verdict.colocated.front());
    host.push_back(host_state_round(rt, runs));
  }
  std::printf("model probe: %zu of %u rounds co-located (cross-core one-way 8 B below %.0fx the same-core one)\n",
              static_cast<std::size_t>(std::count(colocated.begin(), colocated.end(), true)), rounds,
              sm::kColocatedRatio);
  for (std::uint32_t r = 0; r < rounds; ++r)
    std::printf(
        "  round %u: cross-core %.0f ns, same core %.0f ns%s; private copy %.3f ns a line, beyond-cache "
        "gather %.2f ns a piece, cross-core line round trip %.0f ns\n",
        r, cross[r], same[r], colocated[r] ? "  co-located" : "", host[r].copy_ns, host[r].gather_ns,
        host[r].round_trip_ns);
  print_host_state_spread(host);
  return kExitOk;
}

}  // namespace

sm::MachineFile read_machine_option(const std::string& path) {
  if (path == "delta" || path == "intel-delta-256") {
    sm::MachineFile f;
    f.core = sm::intel_delta_256();
    return f;
  }
  try {
    return sm::read_machine_file(path);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--machine ") + e.what());
  }
}

sm::Machine machine_for(const sm::MachineFile& file, const std::string& variant, std::uint64_t processes) {
  sm::Machine m = file.core;
  if (!variant.empty()) {
    const std::optional<sm::ModelVariant> v = sm::parse_model_variant(variant);
    if (!v)
      throw UsageError("--variant: '" + variant + "' is not a model variant (valid: " + sm::model_variant_names() +
                       ")");
    m.variant = *v;
  }
  m.processes = processes;
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    throw UsageError("--machine " + m.name + " cannot run " + std::to_string(processes) + " processes: " + e.what());
  }
  return m;
}

ModelCommand::ModelCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  command_ = app.add_subcommand("model", "The C3 cost model: calibrate this machine's parameters, predict costs");
  calibrate_ = command_->add_subcommand(
      "calibrate", "Measure this machine's core-to-core parameters on the runtime and write a machine file");
  calibrate_->add_option("--out,-o", args_->out, "Machine file to write")->type_name("FILE")->capture_default_str();
  calibrate_
      ->add_option("--repeat,-r", args_->repeat,
                   "Runs per measurement, in all (per round the lower decile, over the rounds the median)")
      ->type_name("K")
      ->capture_default_str();
  args_->trace.add_to(*calibrate_);
  probe_ = command_->add_subcommand("probe",
                                    "The host's state now: calibrate's co-location check, and the figures it records "
                                    "of the host (model/host_state.hpp)");
  probe_->add_option("--rounds", args_->probe_rounds, "Rounds of hand-offs, each judged on its own")
      ->type_name("N")
      ->capture_default_str();
  probe_
      ->add_option("--repeat,-r", args_->probe_repeat,
                   "Runs of each hand-off per round (the lower decile is kept), and of each host-state figure (the "
                   "median)")
      ->type_name("K")
      ->capture_default_str();
  probe_->add_option("--pause", args_->probe_pause, "Milliseconds between rounds (a time series of the host's state)")
      ->type_name("MS")
      ->capture_default_str();
  predict_ = command_->add_subcommand("predict", "Every algorithm's units for an operation, the chosen one first");
  predict_->add_option("--op", args_->op, "one-to-all, all-to-one, all-to-all or exchange")
      ->type_name("OP")
      ->required();
  predict_->add_option("--processes,-n", args_->processes, "Processes P")->type_name("P");
  predict_->add_option("--bytes,-b", args_->bytes, "Bytes L per message (K, M suffixes: powers of 1024)")
      ->type_name("L");
  predict_->add_option("--matrix", args_->matrix, "--op exchange: the Matrix Market file of the exchange")
      ->type_name("FILE");
  predict_
      ->add_option("--machine", args_->machine,
                   "Machine file, or 'delta': the paper's 256-processor Intel Delta (default: an uncalibrated "
                   "two-core node)")
      ->type_name("FILE");
  predict_->add_option("--variant", args_->variant, "paper, calibrated or ring-sync (default: the machine file's)")
      ->type_name("V");
  predict_->add_option("--root", args_->root, "Root of one-to-all and all-to-one")
      ->type_name("R")
      ->capture_default_str();
}

ModelCommand::~ModelCommand() = default;

int ModelCommand::run() const {
  if (calibrate_->parsed()) return calibrate(*args_);
  if (predict_->parsed()) return predict(*args_);
  if (probe_->parsed()) return probe(*args_);
  throw UsageError("model: a subcommand is required: calibrate, probe or predict (see 'switchyard model --help')");
}

}  // namespace switchyard::cli
