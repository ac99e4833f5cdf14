#include "dynamic_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <switchyard/dynamic/real_pipeline.hpp>
#include <switchyard/dynamic/slot_mode.hpp>
#include <switchyard/dynamic/theorems.hpp>
#include <switchyard/errors.hpp>
#include <vector>

#include "cli_support.hpp"
#include "option_parsers.hpp"
#include "trace_option.hpp"

namespace switchyard::cli {

namespace sd = switchyard::dynamic;
namespace sp = switchyard::primitives;

struct DynamicCommand::Args {
  std::string scheme, topology = "complete", processes, rate, sweep, mode = "slots", slots = "20000", seed = "1", json;
  std::string duration = "1", slot_us;  // real mode
  TraceOption trace;  // real mode: its jobs
};

namespace {

// The clock the schemes run on. Slot mode: the slot simulator, where the
// theorems apply exactly. Real mode: pipelines on the runtime's mailboxes,
// rates in requests per second, delays in microseconds.
enum class Mode { slots, real };

sd::DynamicScheme parse_scheme(const std::string& text) {
  if (text == "indirect") return sd::DynamicScheme::indirect_broadcast;
  if (text == "direct") return sd::DynamicScheme::direct_broadcast;
  if (text == "scatter") return sd::DynamicScheme::scatter;
  throw UsageError("--scheme: '" + text + "' is not indirect, direct or scatter");
}

Mode parse_mode(const std::string& text) {
  if (text == "slots") return Mode::slots;
  if (text == "real") return Mode::real;
  throw UsageError("--mode: '" + text + "' is not slots or real");
}

// FROM:TO:STEPS: STEPS rates evenly spaced from FROM to TO, both included.
std::vector<double> parse_sweep(const std::string& text) {
  const auto parts = split(text, ':');
  if (parts.size() != 3) throw UsageError("--sweep: '" + text + "' is not FROM:TO:STEPS (e.g. 0.01:0.2:10)");
  const double from = parse_positive_real(parts[0], "--sweep FROM");
  const double to = parse_positive_real(parts[1], "--sweep TO");
  const auto steps = parse_uint(parts[2], "--sweep STEPS", 2, 1000);
  if (to <= from)
    throw UsageError("--sweep: TO (" + std::string(parts[1]) + ") must be above FROM (" + std::string(parts[0]) + ")");
  std::vector<double> rates;
  for (std::uint64_t i = 0; i < steps; ++i)
    rates.push_back(from + (to - from) * static_cast<double>(i) / static_cast<double>(steps - 1));
  return rates;
}

// A row of the output: the report every mode fills, and what one mode adds.
struct Row {
  sd::DynamicReport report;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

nlohmann::ordered_json to_json(const Row& row) {
  const sd::DynamicReport& r = row.report;
  // null: no bound (0 in the report), or an infinite one (at or past the limit).
  const auto number = [](double x) {
    return std::isfinite(x) && x != 0 ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json j;
  j["scheme"] = sd::scheme_name(r.scheme);
  j["topology"] = r.topology;
  j["processes"] = r.processes;
  j["k"] = r.k;
  j["time_unit"] = r.time_unit;
  j["rate"] = r.rate;
  j["stability_limit"] = r.stability_limit;
  j["stable"] = r.stable;
  j["broadcast_delay"] = r.broadcast_delay;
  j["broadcast_delay_bound"] = number(r.broadcast_delay_bound);
  j["reception_delay"] = r.reception_delay;
  j["reception_delay_bound"] = number(r.reception_delay_bound);
  j["generated"] = r.generated;
  j["delivered"] = r.delivered;
  j.update(row.extra);
  return j;
}

void write_json(OutputFile& out, const std::vector<Row>& rows, bool sweep) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const Row& row : rows) j.push_back(to_json(row));
  out.write((sweep ? j : j.front()).dump(2) + "\n");
  std::printf("wrote %s\n", out.path().c_str());
}

std::string with_error(const sd::DelayEstimate& e) {
  char text[64];
  if (e.samples == 0) return "none completed in the window";
  if (e.half_width > 0)
    std::snprintf(text, sizeof text, "%.3f ± %.3f", e.mean, e.half_width);
  else
    std::snprintf(text, sizeof text, "%.3f (error unknown)", e.mean);
  return text;
}

std::string bound_text(double bound) {
  if (bound == 0) return "-";
  if (!std::isfinite(bound)) return "inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", bound);
  return text;
}

void print_slot_run(const sd::SlotModeResult& r) {
  const sd::DynamicReport& p = r.report;
  const sd::SlotRunResult& run = r.run;
  std::printf("rate λ = %g per process per slot, %.1f %% of the theorem's stability limit %g\n", p.rate,
              100 * p.rate / p.stability_limit, p.stability_limit);
  std::printf("measured: %s (mean backlog %.1f requests in the 2nd quarter, %.1f in the last)\n",
              p.stable ? "stable" : "UNSTABLE", run.backlog.second_quarter, run.backlog.last_quarter);
  std::printf("generated %lld requests, delivered %lld = generated x (N-1): %s; %lld slots with the drain\n",
              static_cast<long long>(run.generated), static_cast<long long>(run.delivered),
              run.delivered == run.generated * static_cast<std::int64_t>(p.processes - 1) ? "yes" : "NO",
              static_cast<long long>(run.slots_run));
  std::printf("throughput %.6g requests per process per slot (offered %g)\n", run.throughput, p.rate);
  const char* what = p.scheme == sd::DynamicScheme::scatter ? "scatter delay T" : "broadcast delay B";
  std::printf("%s = %s slots (95 %% batch means)    bound %s%s\n", what, with_error(run.broadcast_delay).c_str(),
              bound_text(p.broadcast_delay_bound).c_str(),
              p.scheme == sd::DynamicScheme::indirect_broadcast ? " (indirect theorem)"
              : p.scheme == sd::DynamicScheme::scatter          ? " (static-to-dynamic theorem)"
                                                                : "");
  if (p.scheme == sd::DynamicScheme::indirect_broadcast) {
    std::printf("    static-to-dynamic bound %s, light-load bound 1.5 Lbar + 3 delta + 1/k = %s\n",
                bound_text(r.wrapper_bound).c_str(), bound_text(r.light_load_bound).c_str());
  }
  std::printf("reception delay R = %s slots    %s %s\n", with_error(run.reception_delay).c_str(),
              p.scheme == sd::DynamicScheme::direct_broadcast ? "closed form" : "(R <= B)",
              bound_text(p.reception_delay_bound).c_str());
  if (run.periods > 0) {
    std::printf("static executions: %lld, largest M %lld, over X M + V: %lld\n", static_cast<long long>(run.periods),
                static_cast<long long>(run.largest_period_requests), static_cast<long long>(run.periods_over_bound));
  }
}

std::vector<Row> run_slot_mode(sd::SlotModel& model, const std::vector<double>& rates, const sd::SlotRunOptions& base,
                               bool sweep) {
  std::printf("mode: slots, %lld slots of arrivals then a drain, seed %llu\n", static_cast<long long>(base.slots),
              static_cast<unsigned long long>(base.seed));
  if (sweep) {
    std::printf("%12s %7s %9s %12s %22s %10s %22s %10s\n", "rate", "load", "verdict", "throughput",
                model.scheme() == sd::DynamicScheme::scatter ? "T (slots)" : "B (slots)", "bound", "R (slots)",
                model.scheme() == sd::DynamicScheme::direct_broadcast ? "closed" : "");
  }
  std::vector<Row> rows;
  for (double rate : rates) {
    sd::SlotRunOptions options = base;
    options.rate = rate;
    sd::SlotModeResult r;
    try {
      r = model.run(options);
    } catch (const InvalidArgument& e) {
      throw UsageError(std::string("--rate/--sweep/--slots: ") + e.what());
    }
    if (sweep) {
      std::printf("%12.6g %6.1f%% %9s %12.6g %22s %10s %22s %10s\n", rate, 100 * rate / r.report.stability_limit,
                  r.report.stable ? "stable" : "UNSTABLE", r.run.throughput, with_error(r.run.broadcast_delay).c_str(),
                  bound_text(r.report.broadcast_delay_bound).c_str(), with_error(r.run.reception_delay).c_str(),
                  bound_text(r.report.reception_delay_bound).c_str());
    } else {
      print_slot_run(r);
    }
    Row row{r.report, nlohmann::ordered_json::object()};
    row.extra["mode"] = "slots";
    row.extra["slots"] = base.slots;
    row.extra["slots_run"] = r.run.slots_run;
    row.extra["seed"] = base.seed;
    row.extra["throughput"] = r.run.throughput;
    row.extra["broadcast_delay_half_width"] = r.run.broadcast_delay.half_width;
    row.extra["reception_delay_half_width"] = r.run.reception_delay.half_width;
    row.extra["backlog_second_quarter"] = r.run.backlog.second_quarter;
    row.extra["backlog_last_quarter"] = r.run.backlog.last_quarter;
    if (r.light_load_bound > 0) row.extra["light_load_bound"] = r.light_load_bound;
    if (r.wrapper_bound > 0 && std::isfinite(r.wrapper_bound)) row.extra["static_to_dynamic_bound"] = r.wrapper_bound;
    if (r.run.periods > 0) {
      row.extra["per_request_slots"] = model.per_request_slots();
      row.extra["fixed_slots"] = model.fixed_slots();
      row.extra["periods_over_bound"] = r.run.periods_over_bound;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// Real mode's unit of comparison with the theorems: one slot = the time a
// packet takes per hop. Unless --slot-us gives it, it is measured: a direct
// broadcasting run at light load on the same network, whose mean reception
// delay in µs over lbar, the mean distance on the trees in hops, is the time
// per hop through the mailboxes and the routers. Light load is a whole-network
// figure: at most 20 requests/s per node and 5000 receptions/s in all (a fixed
// 20/s per node is 5 million receptions/s at N = 512, beyond two cores, and
// measured a queue, not a hop), for long enough to see 200 requests (0.5-5 s).
double calibrate_slot_us(Runtime& runtime, const sp::VirtualNetwork& g, std::uint64_t seed) {
  const auto n = static_cast<double>(g.size());
  sd::RealPipelineOptions o;
  o.scheme = sd::DynamicScheme::direct_broadcast;
  o.network = g;
  o.rate = std::min(20.0, 5000.0 / (n * std::max(1.0, n - 1)));
  o.seed = seed;
  const double seconds = std::clamp(200.0 / (o.rate * n), 0.5, 5.0);
  const sd::DynamicReport light = sd::run_real(runtime, o, std::chrono::duration<double>(seconds));
  const sd::DirectBroadcastTheory theory(g.size(), sp::edge_disjoint_spanning_trees(g));
  const double slot_us = light.reception_delay / theory.mean_tree_distance();
  std::printf("slot calibrated: %.2f us per hop (light-load direct broadcast: R = %.1f us over lbar = %.2f hops)\n",
              slot_us, light.reception_delay, theory.mean_tree_distance());
  return slot_us;
}

// The slot theorems in real units for a run at `rate` requests/s: the limit
// in requests/s, the delay bound or closed form in µs.
void add_theorem_in_us(sd::DynamicReport& r, sd::SlotModel& model, const sp::VirtualNetwork& g, double slot_us) {
  const double slot_s = slot_us * 1e-6;
  const double rate_per_slot = r.rate * slot_s;
  r.stability_limit = model.stability_limit() / slot_s;
  if (r.scheme == sd::DynamicScheme::direct_broadcast) {
    const sd::DirectBroadcastTheory theory(g.size(), sp::edge_disjoint_spanning_trees(g));
    r.reception_delay_bound = theory.reception_delay(rate_per_slot) * slot_us;
  } else {
    r.broadcast_delay_bound =
        sd::static_to_dynamic_bound(model.per_request_slots(), model.fixed_slots(), g.size(), rate_per_slot) * slot_us;
  }
}

std::vector<Row> run_real_mode(sd::SlotModel& model, const sp::VirtualNetwork& g, const std::vector<double>& rates,
                               double seconds, std::uint64_t seed, std::optional<double> slot_us,
                               const TraceOption& trace) {
  Runtime runtime(trace.runtime_options());
  std::printf("mode: real, %g s of arrivals per rate then a drain, seed %llu, %zu cores\n", seconds,
              static_cast<unsigned long long>(seed), runtime.cores().size());
  const double slot = slot_us ? *slot_us : calibrate_slot_us(runtime, g, seed);
  std::printf("%12s %9s %14s %12s %14s %12s %12s %12s\n", "rate (/s)", "verdict", "limit (/s)",
              model.scheme() == sd::DynamicScheme::scatter ? "T (us)" : "B (us)", "bound (us)", "R (us)",
              model.scheme() == sd::DynamicScheme::direct_broadcast ? "closed (us)" : "", "delivered");
  std::vector<Row> rows;
  for (double rate : rates) {
    sd::RealPipelineOptions o;
    o.scheme = model.scheme();
    o.network = g;
    o.rate = rate;
    o.seed = seed;
    sd::DynamicReport r = sd::run_real(runtime, o, std::chrono::duration<double>(seconds));
    add_theorem_in_us(r, model, g, slot);
    std::printf("%12.6g %9s %14.6g %12.1f %14s %12.1f %12s %12llu%s\n", rate, r.stable ? "stable" : "UNSTABLE",
                r.stability_limit, r.broadcast_delay, bound_text(r.broadcast_delay_bound).c_str(), r.reception_delay,
                bound_text(r.reception_delay_bound).c_str(), static_cast<unsigned long long>(r.delivered),
                r.delivered == r.generated * (r.processes - 1) ? "" : " (NOT generated x (N-1))");
    Row row{r, nlohmann::ordered_json::object()};
    row.extra["mode"] = "real";
    row.extra["duration_s"] = seconds;
    row.extra["slot_us"] = slot;
    row.extra["seed"] = seed;
    rows.push_back(std::move(row));
  }
  return rows;
}

// The sweep's stability limit: between the largest rate judged stable below
// the first one judged unstable, and that one.
void print_stability_limit(const std::vector<Row>& rows) {
  std::optional<double> last_stable, first_unstable;
  for (const Row& row : rows) {
    if (!row.report.stable) {
      first_unstable = row.report.rate;
      break;
    }
    last_stable = row.report.rate;
  }
  const double theorem = rows.front().report.stability_limit;
  if (first_unstable && last_stable) {
    std::printf("stability limit found: between %g and %g (theorem: %g)\n", *last_stable, *first_unstable, theorem);
  } else if (first_unstable) {
    std::printf("stability limit found: below %g, the lowest rate swept (theorem: %g)\n", *first_unstable, theorem);
  } else {
    std::printf("stability limit found: above %g, the highest rate swept (theorem: %g)\n", *last_stable, theorem);
  }
}

int run_command(const DynamicCommand::Args& a) {
  const sd::DynamicScheme scheme = parse_scheme(a.scheme);
  const auto n = parse_uint(a.processes, "--processes", 2, 1 << 16);
  if (a.rate.empty() == a.sweep.empty()) throw UsageError("--rate or --sweep: give exactly one of them");
  const bool sweep = !a.sweep.empty();
  const std::vector<double> rates =
      sweep ? parse_sweep(a.sweep) : std::vector<double>{parse_positive_real(a.rate, "--rate")};
  const Mode mode = parse_mode(a.mode);
  const auto slots = parse_uint(a.slots, "--slots", 16, 100'000'000);
  const auto seed = parse_uint(a.seed, "--seed", 0, ~std::uint64_t{0});
  const double seconds = parse_positive_real(a.duration, "--duration");
  if (seconds > 3600) throw UsageError("--duration: " + a.duration + " s is more than an hour");
  std::optional<double> slot_us;
  if (!a.slot_us.empty()) slot_us = parse_positive_real(a.slot_us, "--slot-us");
  const sp::VirtualNetwork g = parse_topology(a.topology, n);
  if (mode == Mode::real) {
    // Every request is kept until every node has it: refuse runs whose requests would not fit.
    const double requests = rates.back() * seconds * static_cast<double>(n);
    if (requests > 2e7) {
      throw UsageError("--rate/--duration: " + number_text(requests) +
                       " requests in one run is more than this command holds (20 million)");
    }
  }
  std::optional<OutputFile> json;
  if (!a.json.empty()) json.emplace("--json", a.json);

  std::vector<Row> rows;
  sd::SlotModel model(scheme, g);
  std::printf("switchyard dynamic: %s on %s (%d processes)\n", a.scheme.c_str(), g.name().c_str(), g.size());
  std::printf("scheme: %s\n", model.description().c_str());
  if (mode == Mode::slots) {
    sd::SlotRunOptions base;
    base.slots = static_cast<std::int64_t>(slots);
    base.seed = seed;
    rows = run_slot_mode(model, rates, base, sweep);
  } else {
    rows = run_real_mode(model, g, rates, seconds, seed, slot_us, a.trace);
  }
  if (sweep) print_stability_limit(rows);
  if (json) write_json(*json, rows, sweep);
  a.trace.write();
  return kExitOk;
}

}  // namespace

DynamicCommand::DynamicCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  command_ = app.add_subcommand(
      "dynamic",
      "Run a dynamic communication scheme (indirect or direct broadcasting, dynamic scattering) under Poisson "
      "arrivals: throughput and delays beside the theorems, or with --sweep the delay against the load");
  command_
      ->add_option("--scheme", args_->scheme,
                   "indirect (successive PMNBs), direct (greedy on spanning trees) or scatter (PMNS wrapper)")
      ->type_name("NAME")
      ->required();
  command_->add_option("--topology", args_->topology, kTopologyHelp)->type_name("SPEC")->capture_default_str();
  command_->add_option("--processes,-n", args_->processes, "Nodes = processes; must agree with --topology")
      ->type_name("N")
      ->required();
  command_
      ->add_option("--rate", args_->rate,
                   "λ: requests per process per time unit (slot mode: per slot; real mode: per second)")
      ->type_name("λ");
  command_->add_option("--sweep", args_->sweep, "STEPS rates from FROM to TO, both included")
      ->type_name("FROM:TO:STEPS");
  command_
      ->add_option("--mode", args_->mode,
                   "slots (the slot simulator, where the theorems apply exactly) or real (pipelines on the "
                   "runtime's mailboxes: rates per second, delays in microseconds)")
      ->type_name("MODE")
      ->capture_default_str();
  command_->add_option("--slots", args_->slots, "Slot mode: slots of arrivals before the stop (then the run drains)")
      ->type_name("K")
      ->capture_default_str();
  command_->add_option("--duration", args_->duration, "Real mode: seconds of arrivals per rate (then the run drains)")
      ->type_name("S")
      ->capture_default_str();
  command_
      ->add_option("--slot-us", args_->slot_us,
                   "Real mode: microseconds per slot for the theorems' figures (default: measured, the per-hop "
                   "time of a light-load direct broadcast)")
      ->type_name("US");
  command_->add_option("--seed", args_->seed, "Seed of the arrivals (and of the direct scheme's tree choices)")
      ->type_name("S")
      ->capture_default_str();
  command_->add_option("--json", args_->json, "Also write the result as JSON to FILE (a list of rows with --sweep)")
      ->type_name("FILE");
  args_->trace.add_to(*command_);
}

DynamicCommand::~DynamicCommand() = default;

int DynamicCommand::run() const { return run_command(*args_); }

}  // namespace switchyard::cli
