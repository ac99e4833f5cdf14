#include "collective_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <switchyard/bounded_read.hpp>
#include <switchyard/errors.hpp>
#include <switchyard/model/collectives/choice.hpp>
#include <switchyard/model/collectives/measure.hpp>
#include <switchyard/model/machine_file.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <vector>

#include "cli_support.hpp"
#include "json_report.hpp"
#include "model_command.hpp"
#include "option_parsers.hpp"
#include "progress_line.hpp"
#include "trace_option.hpp"

namespace switchyard::cli {

namespace co = switchyard::model::collectives;

struct CollectiveCommand::Args {
  std::string op, algorithm = "all", processes, bytes, repeat = "5", batch = "1", root = "0", machine, variant, json,
                  rescore, rank_by = "median";
  TraceOption trace;
};

namespace {

struct Row {
  std::string algorithm;
  double units = 0;
  schedulers::TimeStats ms;
  double ranked_ms = 0;  // the statistic the orders, Spearman and regret use (--rank-by)
};

struct SizeResult {
  std::uint64_t bytes = 0;
  std::vector<Row> rows;
  std::string chosen, table;
  std::vector<std::string> skipped;  // too big for this machine's memory: why
  std::optional<double> spearman;  // with at least two algorithms
};

// Ranks 1..n of values (ties: the average of their ranks).
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return r;
}

// Spearman's rho: Pearson's correlation of the ranks; nullopt if either side is constant.
std::optional<double> spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<double> a = ranks(x), b = ranks(y);
  const double n = static_cast<double>(a.size()), mean = (n + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - mean) * (b[i] - mean);
    saa += (a[i] - mean) * (a[i] - mean);
    sbb += (b[i] - mean) * (b[i] - mean);
  }
  if (saa == 0 || sbb == 0) return std::nullopt;
  return sab / std::sqrt(saa * sbb);
}

co::Operation parse_op(const std::string& text) {
  try {
    return model::parse_operation(text);
  } catch (const std::invalid_argument&) {
    throw UsageError("--op: unknown operation '" + text + "' (valid: one-to-all, all-to-one, all-to-all)");
  }
}

std::vector<std::string> parse_algorithms(co::Operation op, const std::string& text) {
  if (text == "all") return co::algorithm_names(op);
  if (text == "auto" || co::is_algorithm(op, text)) return {text};
  std::string valid;
  for (const std::string& a : co::algorithm_names(op)) valid += a + ", ";
  throw UsageError("--algorithm: unknown " + std::string(co::operation_name(op)) + " algorithm '" + text +
                   "' (valid: " + valid + (op == co::Operation::all_to_all ? "" : "logp-lev-rec(G), ") + "auto, all)");
}

model::Machine load_machine(const std::string& path, const std::string& variant, Rank processes) {
  return machine_for(path.empty() ? model::default_machine_file() : read_machine_option(path), variant, processes);
}

double regret(const SizeResult& s, const std::string& algorithm) {
  if (s.rows.empty()) return std::nan("");
  double best = s.rows.front().ranked_ms, mine = -1;
  for (const Row& r : s.rows) {
    best = std::min(best, r.ranked_ms);
    if (r.algorithm == algorithm) mine = r.ranked_ms;
  }
  return mine < 0 || best <= 0 ? std::nan("") : mine / best;
}

void print_size(const SizeResult& s, co::Operation op, Rank p, bool all, bool rank_by_min) {
  std::printf("\n%s, p = %u, L = %llu B\n", std::string(co::operation_name(op)).c_str(), p,
              static_cast<unsigned long long>(s.bytes));
  std::printf("  %-20s %16s %12s %12s %12s %12s %12s %12s  %s\n", "algorithm", "predicted units", "median ms",
              "mean ms", "p90 ms", "p99 ms", "min ms", "max ms", "");
  for (const Row& r : s.rows) {
    std::string mark = r.algorithm == s.chosen ? "<- auto" : "";
    if (r.algorithm == s.table) mark += mark.empty() ? "<- table" : ", table";
    std::printf("  %-20s %16.0f %12.4f %12.4f %12.4f %12.4f %12.4f %12.4f  %s\n", r.algorithm.c_str(), r.units,
                r.ms.median, r.ms.mean, r.ms.p90, r.ms.p99, r.ms.min, r.ms.max, mark.c_str());
  }
  for (const std::string& why : s.skipped) std::printf("  left out: %s\n", why.c_str());
  if (s.spearman) std::printf("  Spearman (predicted vs measured order): %.3f\n", *s.spearman);
  if (all) {
    std::printf("  regret (over the best, by %s): auto %.3f, table %.3f\n", rank_by_min ? "min" : "median",
                regret(s, s.chosen), regret(s, s.table));
  }
}

nlohmann::ordered_json to_json(const std::vector<SizeResult>& sizes, co::Operation op, Rank p, Rank root,
                               std::uint32_t repeat, const model::Machine& machine, std::size_t cores, bool all,
                               bool rank_by_min) {
  nlohmann::ordered_json j;
  j["op"] = std::string(co::operation_name(op));
  j["processes"] = p;
  j["root"] = root;
  j["cores"] = cores;
  j["repeat"] = repeat;
  j["machine"] = machine.name;
  j["variant"] = std::string(model::model_variant_name(machine.variant));
  j["rank_by"] = rank_by_min ? "min" : "median";
  j["bytes"] = nlohmann::ordered_json::array();
  j["results"] = nlohmann::ordered_json::array();
  std::vector<double> rhos;
  for (const SizeResult& s : sizes) {
    j["bytes"].push_back(s.bytes);
    for (const Row& r : s.rows) {
      j["results"].push_back({{"bytes", s.bytes},
                              {"algorithm", r.algorithm},
                              {"predicted_units", r.units},
                              {"measured_ms", time_json(r.ms)},
                              {"chosen", r.algorithm == s.chosen},
                              {"table", r.algorithm == s.table},
                              {"samples_ms", r.ms.samples},
                              {"verified", true}});
    }
    nlohmann::ordered_json per{{"bytes", s.bytes}, {"auto", s.chosen}, {"table", s.table}, {"skipped", s.skipped}};
    per["spearman"] = s.spearman ? nlohmann::ordered_json(*s.spearman) : nlohmann::ordered_json(nullptr);
    if (all) per["regret"] = {{"auto", regret(s, s.chosen)}, {"table", regret(s, s.table)}};
    j["by_bytes"].push_back(per);
    if (s.spearman) rhos.push_back(*s.spearman);
  }
  // One figure per run: the mean over the sizes of the per-size rank agreement.
  j["spearman"] = rhos.empty() ? nlohmann::ordered_json(nullptr)
                               : nlohmann::ordered_json(std::accumulate(rhos.begin(), rhos.end(), 0.0) / rhos.size());
  return j;
}

// The model's predictions that score() and auto make: every algorithm's
// supersteps, about p^2 transfers for all-to-all's direct and the trees'
// halving. In the heap's peak of collective jobs here they take about 70 bytes
// a pair of processes for all-to-all and 8 for the others; counted at about
// twice that.
double prediction_bytes(co::Operation op, Rank p) {
  return static_cast<double>(p) * p * (op == co::Operation::all_to_all ? 128 : 16);
}

// Refused before any prediction is made.
void check_prediction_memory(co::Operation op, Rank p) {
  check_memory(prediction_bytes(op, p), "--op " + std::string(co::operation_name(op)) + " on " + std::to_string(p) +
                                            " processes: the model's predictions of its algorithms");
}

// Charges the measured rows of s with `machine`: their units, auto's and the
// table's pick, and the rank agreement of units and medians.
// rank_by_min: order by the fastest run instead of the median (on a machine
// shared with other tenants, which only ever add time).
void score(SizeResult& s, co::Operation op, Rank p, Rank root, const model::Machine& machine, bool rank_by_min) {
  s.chosen = co::choose_algorithm(op, p, s.bytes, &machine, root);
  s.table = co::fixed_table_algorithm(op, p, s.bytes);
  std::vector<double> units, ms;
  for (Row& r : s.rows) {
    r.units = co::predicted_units(op, r.algorithm, p, s.bytes, machine, root);
    units.push_back(r.units);
    r.ranked_ms = rank_by_min ? r.ms.min : r.ms.median;
    ms.push_back(r.ranked_ms);
  }
  if (s.rows.size() >= 2) s.spearman = spearman(units, ms);
}

void report(const std::vector<SizeResult>& results, co::Operation op, Rank p, Rank root, std::uint32_t repeat,
            const model::Machine& machine, std::size_t cores, bool all, bool rank_by_min,
            std::optional<OutputFile>& json) {
  std::printf(
      "\nevery byte verified: yes; times: median of %u samples, barrier to barrier, the algorithms' samples "
      "interleaved\n",
      repeat);
  if (json) {
    write_json_report(*json, to_json(results, op, p, root, repeat, machine, cores, all, rank_by_min));
  }
}

std::string model_name(const model::Machine& machine) {
  return machine.name + " (" + std::string(model::model_variant_name(machine.variant)) + " model)";
}

// The largest --rescore file read: a device without end (/dev/zero, a FIFO) is refused there.
constexpr std::size_t kMaxRescoreBytes = std::size_t{256} << 20;

// --rescore: the measurements of an earlier --json, charged again with another
// machine file or model variant (no run).
int rescore(const std::string& measured_path, const std::string& machine_path, const std::string& variant,
            bool rank_by_min, const std::string& json_path) {
  nlohmann::json in;
  try {
    std::ifstream file(measured_path, std::ios::binary);
    if (!file) throw std::runtime_error("cannot open it");
    std::string text;
    if (!read_at_most(file, kMaxRescoreBytes, text)) {
      throw std::runtime_error("more than " + std::to_string(kMaxRescoreBytes >> 20) +
                               " MiB: not a `collective --json` file (100,000 repetitions of every algorithm at "
                               "ten sizes write about 200 MiB)");
    }
    if (file.bad()) throw std::runtime_error("read error");
    in = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError("--rescore: '" + measured_path + "': " + e.what());
  }
  std::vector<SizeResult> results;
  co::Operation op{};
  Rank p = 0, root = 0;
  std::uint32_t repeat = 0;
  std::size_t cores = 0;
  try {
    op = parse_op(in.at("op").get<std::string>());
    p = in.at("processes").get<Rank>();
    root = in.value("root", Rank{0});  // files written before --root have none: 0
    repeat = in.at("repeat").get<std::uint32_t>();
    cores = in.at("cores").get<std::size_t>();
    for (const auto& b : in.at("by_bytes")) {
      results.emplace_back();
      results.back().bytes = b.at("bytes").get<std::uint64_t>();
      results.back().skipped = b.at("skipped").get<std::vector<std::string>>();
    }
    for (const auto& r : in.at("results")) {
      const auto L = r.at("bytes").get<std::uint64_t>();
      auto s = std::find_if(results.begin(), results.end(), [&](const SizeResult& x) { return x.bytes == L; });
      if (s == results.end()) throw std::runtime_error("a result for L = " + std::to_string(L) + " not in by_bytes");
      s->rows.push_back({r.at("algorithm").get<std::string>(), 0,
                         schedulers::summarize(r.at("samples_ms").get<std::vector<double>>())});
    }
  } catch (const std::exception& e) {
    throw UsageError("--rescore: '" + measured_path + "' is not a `collective --json` file: " + e.what());
  }
  check_prediction_memory(op, p);
  const model::Machine machine = load_machine(machine_path, variant, p);
  std::optional<OutputFile> json;
  if (!json_path.empty()) json.emplace("--json", json_path);
  std::printf("switchyard collective: %s on %u processes, measured in %s; machine: %s\n",
              std::string(co::operation_name(op)).c_str(), p, measured_path.c_str(), model_name(machine).c_str());
  bool all = false;
  for (SizeResult& s : results) {
    score(s, op, p, root, machine, rank_by_min);
    all = all || s.rows.size() > 1;
    print_size(s, op, p, s.rows.size() > 1, rank_by_min);
  }
  report(results, op, p, root, repeat, machine, cores, all, rank_by_min, json);
  return kExitOk;
}

// --root: a rank of the p processes; all-to-all has none.
Rank parse_root(const std::string& text, co::Operation op, Rank p) {
  const auto root = static_cast<Rank>(parse_uint(text, "--root", 0, p - 1));
  if (op == co::Operation::all_to_all && root != 0) {
    throw UsageError("--root: all-to-all has no root; --root " + text + " is only for one-to-all and all-to-one");
  }
  return root;
}

int run_command(const std::string& op_text, const std::string& algorithm_text, const std::string& processes_text,
                const std::string& bytes_text, const std::string& repeat_text, const std::string& batch_text,
                const std::string& root_text, const std::string& machine_path, const std::string& variant,
                bool rank_by_min, const std::string& json_path, const TraceOption& trace) {
  const co::Operation op = parse_op(op_text);
  const std::vector<std::string> algorithms = parse_algorithms(op, algorithm_text);
  const auto p = static_cast<Rank>(parse_uint(processes_text, "--processes", 1, 1u << 16));
  const std::vector<std::uint64_t> sizes = parse_byte_list(bytes_text, 1ull << 30);
  const auto repeat = static_cast<std::uint32_t>(parse_uint(repeat_text, "--repeat", 1, 100'000));
  const auto batch = static_cast<std::uint32_t>(parse_uint(batch_text, "--batch", 1, 100'000));
  const Rank root = parse_root(root_text, op, p);
  const model::Machine machine = load_machine(machine_path, variant, p);
  const bool all = algorithm_text == "all";
  // A single algorithm that needs too much memory is refused; `all` leaves it
  // out of that size's table, and says so.
  auto memory_refusal = [&](const std::string& name, std::uint64_t L) -> std::optional<std::string> {
    try {
      check_memory(
          co::memory_needed(op, name, p, L) + prediction_bytes(op, p),
          "--op " + op_text + " " + name + " on " + std::to_string(p) + " processes at --bytes " + std::to_string(L));
    } catch (const UsageError& e) {
      if (!all) throw;
      return std::string(e.what());
    }
    return std::nullopt;
  };
  check_prediction_memory(op, p);
  for (std::uint64_t L : sizes) {
    for (const std::string& a : algorithms)
      memory_refusal(a == "auto" ? co::choose_algorithm(op, p, L, &machine, root) : a, L);
  }
  std::optional<OutputFile> json;
  if (!json_path.empty()) json.emplace("--json", json_path);

  Runtime rt(trace.runtime_options());
  std::printf("switchyard collective: %s on %u processes%s, %zu core(s), %u sample(s) of %u run(s); machine: %s\n",
              std::string(co::operation_name(op)).c_str(), p,
              op == co::Operation::all_to_all ? "" : (", root " + std::to_string(root)).c_str(), rt.cores().size(),
              repeat, batch, model_name(machine).c_str());
  std::fflush(stdout);
  std::vector<SizeResult> results;
  ProgressLine progress("collective");
  std::uint64_t done = 0;
  for (std::uint64_t L : sizes) {
    SizeResult s;
    s.bytes = L;
    progress(done++, sizes.size(), std::to_string(L) + " B");
    std::vector<std::string> measured;
    for (const std::string& asked : algorithms) {
      const std::string name = asked == "auto" ? co::choose_algorithm(op, p, L, &machine, root) : asked;
      if (const auto refusal = memory_refusal(name, L)) {
        s.skipped.push_back(*refusal);
        continue;
      }
      measured.push_back(name);
    }
    // Interleaved, every plan is held at once; when together they need
    // more than the machine allows, each algorithm gets its own job.
    double together = prediction_bytes(op, p);
    for (const std::string& a : measured) together += co::memory_needed(op, a, p, L);
    bool interleave = true;
    try {
      check_memory(together, "all the algorithms at once");
    } catch (const UsageError& e) {
      interleave = false;
      std::printf("  measured one job per algorithm (not interleaved): %s\n", e.what());
    }
    std::vector<std::vector<double>> samples;
    if (interleave) {
      samples = co::measure_collectives(rt, op, measured, p, L, repeat, batch, 1, root);
    } else {
      for (const std::string& a : measured)
        samples.push_back(co::measure_collectives(rt, op, {a}, p, L, repeat, batch, 1, root)[0]);
    }
    for (std::size_t a = 0; a < measured.size(); ++a)
      s.rows.push_back({measured[a], 0, schedulers::summarize(samples[a])});
    score(s, op, p, root, machine, rank_by_min);
    progress.clear();
    print_size(s, op, p, all, rank_by_min);
    std::fflush(stdout);
    results.push_back(std::move(s));
  }
  report(results, op, p, root, repeat, machine, rt.cores().size(), all, rank_by_min, json);
  trace.write();
  return kExitOk;
}

}  // namespace

CollectiveCommand::CollectiveCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  command_ = app.add_subcommand("collective",
                                "Run the C3 paper's k-level algorithms for one-to-all, all-to-one or all-to-all, check "
                                "every byte, and print measured times beside the model's predicted units");
  command_->add_option("--op", args_->op, "one-to-all (scatter), all-to-one (gather) or all-to-all (required)")
      ->type_name("OP");
  command_
      ->add_option("--algorithm", args_->algorithm,
                   "An algorithm of the operation, 'auto' (fewest predicted units) or 'all' (every one; marks auto's "
                   "and the fixed table's choice)")
      ->type_name("NAME")
      ->capture_default_str();
  command_->add_option("--processes,-n", args_->processes, "Software processes p (required)")->type_name("P");
  command_
      ->add_option("--bytes,-b", args_->bytes, "Message sizes L, comma-separated (K, M, G: powers of 1024; required)")
      ->type_name("LIST");
  command_->add_option("--repeat,-r", args_->repeat, "Timed runs per algorithm and size (median, min, max)")
      ->type_name("K")
      ->capture_default_str();
  command_
      ->add_option("--batch", args_->batch,
                   "Runs per timed sample, back to back (the sample is their mean): for collectives of a few us, "
                   "whose single runs sit in the barriers' noise")
      ->type_name("B")
      ->capture_default_str();
  command_
      ->add_option("--root", args_->root,
                   "The rank that scatters (one-to-all) or gathers (all-to-one); all-to-all has none")
      ->type_name("R")
      ->capture_default_str();
  command_
      ->add_option("--machine", args_->machine,
                   "Machine file of `switchyard model calibrate` (default: the uncalibrated two-core defaults)")
      ->type_name("FILE");
  command_
      ->add_option("--variant", args_->variant,
                   "Charge with the paper's metric, the calibrated one or ring-sync (default: the file's)")
      ->type_name("paper|calibrated|ring-sync");
  command_->add_option("--json", args_->json, "Also write the results as JSON to FILE")->type_name("FILE");
  args_->trace.add_to(*command_);
  command_
      ->add_option("--rank-by", args_->rank_by,
                   "Order the algorithms (Spearman, regret) by their median run or their fastest (min): other "
                   "tenants of a shared machine only add time")
      ->type_name("median|min")
      ->capture_default_str();
  command_
      ->add_option("--rescore", args_->rescore,
                   "Run nothing: charge the measurements of an earlier --json FILE with --machine / --variant "
                   "(--op, --processes, --bytes, --algorithm, --repeat come from the file)")
      ->type_name("FILE");
}

CollectiveCommand::~CollectiveCommand() = default;

int CollectiveCommand::run() const {
  const Args& a = *args_;
  if (a.rank_by != "median" && a.rank_by != "min") {
    throw UsageError("--rank-by: '" + a.rank_by + "' is neither 'median' nor 'min'");
  }
  const bool by_min = a.rank_by == "min";
  if (!a.rescore.empty()) return rescore(a.rescore, a.machine, a.variant, by_min, a.json);
  for (const auto& [value, option] : {std::pair{&a.op, "--op"}, {&a.processes, "--processes"}, {&a.bytes, "--bytes"}}) {
    if (value->empty()) throw UsageError(std::string(option) + " is required");
  }
  return run_command(args_->op, args_->algorithm, args_->processes, args_->bytes, args_->repeat, args_->batch,
                     args_->root, args_->machine, args_->variant, by_min, args_->json, args_->trace);
}

}  // namespace switchyard::cli
