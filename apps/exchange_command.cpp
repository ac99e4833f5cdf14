#include "exchange_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <switchyard/halo/halo_exchange.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/schedulers/auto_scheduler.hpp>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <switchyard/schedulers/scheduler_table.hpp>
#include <switchyard/schedulers/static_schedulers.hpp>
#include <vector>

#include "cli_support.hpp"
#include "copy_floor.hpp"
#include "cores_option.hpp"
#include "json_report.hpp"
#include "matrix_estimates.hpp"
#include "model_command.hpp"
#include "option_parsers.hpp"
#include "progress_line.hpp"
#include "trace_option.hpp"

namespace switchyard::cli {

namespace sys = switchyard::schedulers;

struct ExchangeCommand::Args {
  std::string processes = "32", density = "8", bytes = "16,1024,65536", repeat = "5", seed = "1";
  std::string schedulers = join(sys::default_exchange_schedulers(), ",");
  std::string matrix, sparse, blocks, realtime_priority, cores, ring_capacity, ac_strip, drsn_retry_yields, max_phases,
      json, csv, machine, max_work;
  std::string execution = "copy", copy = "pull";
  bool nonuniform = false, interleave = false, strict = false;
  TraceOption trace;
  // The pattern options (--matrix replaces them), and those of them given.
  std::vector<const CLI::Option*> pattern_options;
  std::vector<std::string> pattern_options_given;
};

namespace {

constexpr std::uint64_t kMaxBytes = 1ull << 30;

// What an exchange of a matrix of this shape and `total_bytes` takes: every
// process keeps its outgoing and its incoming messages (twice the matrix's
// bytes, each message rounded up to a cache line), the bookkeeping of the
// messages and processes, and the largest working table of a scheduler (auto
// makes LP's too); `matrices` of them, `generated` or read, run one after another.
Estimate exchange_estimate(const sys::MatrixShape& shape, double total_bytes, const sys::ExchangeOptions& o,
                           std::size_t matrices, bool generated) {
  double table = 0;
  for (const std::string& name : o.schedulers) {
    const sys::SchedulerDescriptor* d = sys::find_scheduler(name);
    if (d != nullptr && d->online != sys::OnlineScheme::none) continue;  // online: no table
    table = std::max(table, sys::schedule_table_bytes(name == sys::kAutoScheduler ? "lp" : name, shape));
  }
  const auto messages = static_cast<double>(shape.messages);
  return {2 * (total_bytes + kBufferAlignment * messages) + messages * kBytesPerMessage +
              static_cast<double>(shape.processes) * kBytesPerProcess + table,
          static_cast<double>(matrices) *
              (sys::exchange_work(o.schedulers, shape, o.repeat) + (generated ? generation_work(shape) : 0) +
               static_cast<double>(shape.messages + shape.processes))};
}

// What the halo exchange's matrix is made from, beyond what the reader takes
// (halo::csr_read_bytes): per row, the pattern's copy of row_start, the
// partition's owner, order and position, the maps' owned rows and the columns
// seen, about 50 bytes in the peak RSS of a matrix of many rows and few
// entries, counted at twice that for the vectors that double as they grow;
// per entry, the pattern's column and the ghosts found (the whole run peaks
// at about 60 bytes an entry, less than the reader's estimate alone).
constexpr double kBytesPerHaloRow = 96;
constexpr double kBytesPerHaloEntry = 24;

// Refused before the matrix is read, from what its file announces: the
// reader's arrays, the halo maps' and each block's process.
void check_sparse_memory(const std::string& path, Rank blocks) {
  const halo::MatrixMarketSize size = halo::read_matrix_market_size_file(path);
  check_memory(halo::csr_read_bytes<std::complex<double>>(size) + static_cast<double>(size.rows) * kBytesPerHaloRow +
                   static_cast<double>(size.stored_entries()) * kBytesPerHaloEntry + blocks * kBytesPerProcess,
               "exchange --sparse '" + path + "' (" + std::to_string(size.rows) + " rows, " +
                   std::to_string(size.entries) + " entries) --blocks " + std::to_string(blocks));
}

// --sparse FILE --blocks P: the halo exchange of y = A x, A's rows (and x) in
// P contiguous blocks: (owner, needer) carries a double (8 bytes) per ghost
// entry. Read as complex, which takes every field (only the pattern counts).
sys::CommMatrix load_sparse_halo(const std::string& path, Rank blocks) {
  try {
    check_sparse_memory(path, blocks);
    const auto a = halo::read_csr_matrix_market_file<std::complex<double>>(path);
    return halo::halo_matrix(halo::halo_maps(halo::pattern_of(a), halo::RowPartition::blocks(a.rows, blocks)),
                             sizeof(double));
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--sparse: ") + e.what());
  }
}

// One matrix of the run: a message size (or unit) of the generated pattern, or the file.
struct MatrixRun {
  std::string label;  // first column of the table
  std::uint64_t bytes;  // the size, the unit, or the file's largest message
  sys::ExchangeReport report;
  double floor_ms = 0;  // copy_floor_ms of the matrix
};

std::string cell(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The papers' layout (Ranka-Wang-Fox Table 2, Wang-Lin-Ranka Table 4): a column
// per scheduler; communication time by message size, then scheduling time,
// phases, and DRS_N's inquiries.
void print_table(const std::vector<MatrixRun>& runs, const std::vector<std::string>& schedulers,
                 const std::string& first_column, std::uint64_t repeat) {
  constexpr int kLabel = 26, kCell = 11;
  auto row = [&](const std::string& label, auto&& value) {
    std::printf("%-*s", kLabel, label.c_str());
    // Wider where a name needs it ("optimal-bytes"): two spaces before each.
    for (std::size_t s = 0; s < schedulers.size(); ++s)
      std::printf("%*s", std::max(kCell, static_cast<int>(schedulers[s].size()) + 2), value(s).c_str());
    std::printf("\n");
  };
  row(first_column, [&](std::size_t s) { return schedulers[s]; });
  auto block = [&](const std::string& title, auto&& value) {
    std::printf("%s\n", title.c_str());
    for (const MatrixRun& run : runs) {
      row("  " + run.label, [&](std::size_t s) { return value(run.report.results[s]); });
    }
  };
  block("comm (ms, median of " + std::to_string(repeat) + ")",
        [](const sys::SchedulerResult& r) { return cell("%.3f", r.comm_ms.median); });
  // The tails: a loop of exchanges pays the mean, and the rare slow runs in it.
  block("comm (ms, mean)", [](const sys::SchedulerResult& r) { return cell("%.3f", r.comm_ms.mean); });
  block("comm (ms, p90)", [](const sys::SchedulerResult& r) { return cell("%.3f", r.comm_ms.p90); });
  block("comm (ms, p99)", [](const sys::SchedulerResult& r) { return cell("%.3f", r.comm_ms.p99); });
  block("comm (ms, max)", [](const sys::SchedulerResult& r) { return cell("%.3f", r.comm_ms.max); });
  block("comp (ms)", [](const sys::SchedulerResult& r) {
    // AC makes nothing before it sends (no schedule, no Generate_Recv).
    const sys::SchedulerDescriptor* d = sys::find_scheduler(r.scheduler);
    return d != nullptr && d->online == sys::OnlineScheme::ac ? std::string("0") : cell("%.3f", r.schedule_ms.median);
  });
  block("perm (phases)",
        [](const sys::SchedulerResult& r) { return r.phases ? std::to_string(*r.phases) : std::string("-"); });
  block("inquiries",
        [](const sys::SchedulerResult& r) { return r.inquiries ? std::to_string(*r.inquiries) : std::string("-"); });
  for (const MatrixRun& run : runs) {
    for (const sys::SchedulerResult& r : run.report.results) {
      if (!r.chosen.empty()) std::printf("auto chose %s for %s\n", r.chosen.c_str(), run.label.c_str());
    }
  }
  std::printf("every payload byte of every repetition verified: yes\n\n");

  std::printf("%-*s%*s%*s%*s\n", kLabel, ("Generate_Recv (ms, median of " + std::to_string(repeat) + ")").c_str(),
              kCell, "concat", kCell, "AM", kCell, "concat/AM");
  for (const MatrixRun& run : runs) {
    const auto& g = *run.report.generate_recv;
    std::printf("%-*s%*.3f%*.3f%*.1f\n", kLabel, ("  " + run.label).c_str(), kCell, g.concat_ms.median, kCell,
                g.am_ms.median, kCell, g.am_ms.median > 0 ? g.concat_ms.median / g.am_ms.median : 0.0);
  }
}

// What an exchange runs on: the matrix of --matrix, or the generated pattern's
// processes, density and message sizes (each checked against the memory).
struct ExchangeInput {
  std::optional<sys::CommMatrix> file_matrix;
  std::uint64_t processes = 0, density = 0;
  std::vector<std::uint64_t> sizes;
};

// The exchange the command line asks for, refused (check_estimate) when its
// memory or work is beyond this machine or --max-work.
ExchangeInput parse_exchange_input(const ExchangeCommand::Args& a, const sys::ExchangeOptions& options) {
  std::optional<sys::CommMatrix> file_matrix;
  std::uint64_t processes = 0, density = 0;
  std::vector<std::uint64_t> sizes;
  sys::MatrixShape shape;
  double total_bytes = 0;
  std::string request;  // names the exchange in a refusal
  if (!a.sparse.empty() && !a.matrix.empty()) throw UsageError("--sparse and --matrix: give one matrix, not both");
  if (a.sparse.empty() != a.blocks.empty()) throw UsageError("--sparse and --blocks go together");
  if (!a.matrix.empty() || !a.sparse.empty()) {
    const char* which = a.matrix.empty() ? "--sparse" : "--matrix";
    if (!a.pattern_options_given.empty()) {
      std::fprintf(stderr,
                   "switchyard: note: %s not used with %s: the file gives the processes, the pattern "
                   "and the message sizes\n",
                   join(a.pattern_options_given).c_str(), which);
    }
    file_matrix =
        a.matrix.empty()
            ? load_sparse_halo(a.sparse, static_cast<Rank>(parse_uint(a.blocks, "--blocks", 1, kMaxProcesses)))
            : load_matrix(a.matrix);
    shape = sys::MatrixShape::of(*file_matrix);
    processes = shape.processes;
    density = shape.max_degree;
    sizes = {shape.largest_message};
    total_bytes = static_cast<double>(file_matrix->total_bytes());
    request = std::string("exchange ") + which + " '" + (a.matrix.empty() ? a.sparse : a.matrix) + "' (" +
              std::to_string(processes) + " processes, " + std::to_string(shape.messages) + " messages)";
  } else {
    processes = parse_uint(a.processes, "--processes", 1, kMaxProcesses);
    density = parse_uint(a.density, "--density", 0, kMaxProcesses);
    if (density > processes) {
      throw UsageError("--density: " + std::to_string(density) + " messages per process is more than the " +
                       std::to_string(processes) + " processes of --processes " + std::to_string(processes) +
                       " (it must be between 0 and " + std::to_string(processes) + ")");
    }
    sizes = parse_byte_list(a.bytes, kMaxBytes);
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    // Test set 2 draws sizes up to 32 units.
    const std::uint64_t biggest_message = largest * (a.nonuniform ? 32 : 1);
    // Fig. 7: d messages per row and per column, self-messages among them.
    shape = {processes, processes * density, density, biggest_message, density > 0};
    total_bytes = static_cast<double>(shape.messages) * static_cast<double>(biggest_message);
    request = "exchange --processes " + std::to_string(processes) + " --density " + std::to_string(density) +
              " (messages of up to " + human_bytes(static_cast<double>(biggest_message)) + ")";
  }
  check_estimate(exchange_estimate(shape, total_bytes, options, sizes.size(), !file_matrix),
                 a.max_work.empty() ? kDefaultMaxWork : parse_max_work(a.max_work), request);
  return {std::move(file_matrix), processes, density, std::move(sizes)};
}

sys::ExchangeOptions parse_exchange_options(const ExchangeCommand::Args& a) {
  sys::ExchangeOptions options;
  options.schedulers = parse_scheduler_list(a.schedulers);
  options.repeat = static_cast<std::uint32_t>(parse_uint(a.repeat, "--repeat", 1, 1'000'000));
  options.seed = parse_uint(a.seed, "--seed", 0, ~std::uint64_t{0});
  if (!a.max_phases.empty()) options.max_phases = parse_uint(a.max_phases, "--max-phases", 1, ~std::uint64_t{0});
  if (!a.ring_capacity.empty()) {
    options.run_options.ring_capacity =
        parse_uint(a.ring_capacity, "--ring-capacity (--mailbox-capacity)", 1, std::size_t{1} << 24);
  }
  if (!a.ac_strip.empty()) options.ac.strip = parse_uint(a.ac_strip, "--ac-strip", 0, 1'000'000);
  if (!a.drsn_retry_yields.empty()) {
    options.drsn_retry_yields =
        static_cast<std::uint32_t>(parse_uint(a.drsn_retry_yields, "--drsn-retry-yields", 1, 1'000'000));
  }
  if (!a.machine.empty()) options.machine = read_machine_option(a.machine);
  if (options.schedulers.empty()) options.schedulers = sys::default_exchange_schedulers();
  options.interleave = a.interleave;
  options.execution = a.execution == "messages" ? sys::ExchangeExecution::messages : sys::ExchangeExecution::compiled;
  options.copy_side = a.copy == "push" ? CopySide::sender : CopySide::receiver;
  options.strict = a.strict;
  return options;
}

void write_exchange_json(const ExchangeCommand::Args& a, const ExchangeInput& input,
                         const sys::ExchangeOptions& options, const Runtime& runtime,
                         const std::vector<MatrixRun>& runs, OutputFile& output) {
  const auto& [file_matrix, processes, density, sizes] = input;
  nlohmann::ordered_json j;
  j["processes"] = processes;
  j["density"] = density;
  j["nodes"] = runtime.nodes();
  j["cores"] = runtime.cores().size();  // per node
  j["core_list"] = runtime.cores();
  j["pattern"] = !a.sparse.empty() ? "sparse" : file_matrix ? "matrix" : a.nonuniform ? "nonuniform" : "fig7";
  if (file_matrix) j["matrix"] = a.matrix.empty() ? a.sparse : a.matrix;
  j["repeat"] = options.repeat;
  j["seed"] = options.seed;
  j["interleaved"] = options.interleave;
  j["execution"] = a.execution;
  if (a.execution == "copy") {
    j["copy"] = a.copy;
    j["strict"] = a.strict;
  }
  j["mailbox_capacity"] = options.run_options.ring_capacity;
  j["results"] = nlohmann::ordered_json::array();
  j["generate_recv"] = nlohmann::ordered_json::array();
  for (const MatrixRun& run : runs) {
    for (const auto& r : run.report.results) {
      nlohmann::ordered_json row;
      row["scheduler"] = r.scheduler;
      row["bytes"] = run.bytes;
      row["comm_ms"] = time_json(r.comm_ms);
      row["floor_ms"] = run.floor_ms;
      row["schedule_ms"] = r.schedule_ms.median;
      if (r.phases) row["phases"] = *r.phases;
      if (!r.chosen.empty()) row["chosen"] = r.chosen;
      if (r.inquiries) {
        row["inquiries"] = *r.inquiries;
        row["inquiries_samples"] = r.inquiry_samples;
      }
      row["verified"] = r.verified;
      row["samples_ms"] = r.comm_ms.samples;
      row["messages"] = run.report.messages;
      row["megabytes"] = static_cast<double>(run.report.total_bytes) / 1e6;
      row["slots"] = r.job.slots;
      row["mailbox_full"] = r.job.ring_full;
      j["results"].push_back(std::move(row));
    }
    const auto& g = *run.report.generate_recv;
    j["generate_recv"].push_back(
        {{"bytes", run.bytes}, {"recv_ms", {{"concat", time_json(g.concat_ms)}, {"am", time_json(g.am_ms)}}}});
  }
  write_json_report(output, j);
}

void write_exchange_csv(const ExchangeInput& input, const sys::ExchangeOptions& options, const Runtime& runtime,
                        const std::vector<MatrixRun>& runs, OutputFile& output) {
  const auto& [file_matrix, processes, density, sizes] = input;
  std::ostringstream out;
  out.precision(6);
  out << std::fixed;
  out << "scheduler,processes,density,cores,bytes,repeat,comm_ms_median,comm_ms_min,comm_ms_max,comm_ms_mean,"
         "comm_ms_p90,comm_ms_p99,schedule_ms,phases,inquiries,messages,megabytes,verified\n";
  for (const MatrixRun& run : runs) {
    for (const auto& r : run.report.results) {
      out << r.scheduler << "," << processes << "," << density << "," << runtime.cores().size() << "," << run.bytes
          << "," << options.repeat << "," << r.comm_ms.median << "," << r.comm_ms.min << "," << r.comm_ms.max << ","
          << r.comm_ms.mean << "," << r.comm_ms.p90 << "," << r.comm_ms.p99 << "," << r.schedule_ms.median << ","
          << (r.phases ? std::to_string(*r.phases) : "") << "," << (r.inquiries ? std::to_string(*r.inquiries) : "")
          << "," << run.report.messages << "," << static_cast<double>(run.report.total_bytes) / 1e6 << ","
          << (r.verified ? "yes" : "no") << "\n";
    }
  }
  output.write(out.str());
  std::printf("wrote %s\n", output.path().c_str());
}

int run_exchange(const ExchangeCommand::Args& a) {
  const sys::ExchangeOptions options = parse_exchange_options(a);
  const ExchangeInput input = parse_exchange_input(a, options);
  const auto& [file_matrix, processes, density, sizes] = input;
  std::optional<OutputFile> json, csv;
  if (!a.json.empty()) json.emplace("--json", a.json);
  if (!a.csv.empty()) csv.emplace("--csv", a.csv);
  auto rt = make_runtime(a.cores, &a.trace,
                         a.realtime_priority.empty()
                             ? 0
                             : static_cast<int>(parse_uint(a.realtime_priority, "--realtime-priority", 1, 99)));

  const std::string pattern = !a.sparse.empty() ? "the halo exchange of sparse matrix " + a.sparse + " in " + a.blocks +
                                                      " blocks of rows (8 bytes per ghost entry)"
                              : file_matrix  ? "matrix file " + a.matrix
                              : a.nonuniform ? "Wang-Lin-Ranka test set 2 (Fig. 7 pattern, sizes unit x 1..32)"
                                             : "Ranka-Wang-Fox Fig. 7 (uniform sizes)";
  std::printf("switchyard exchange: %llu processes on %s, %s %llu, %s\n", static_cast<unsigned long long>(processes),
              where_it_runs(*rt).c_str(), file_matrix ? "most messages sent or received by one process" : "density",
              static_cast<unsigned long long>(density), pattern.c_str());
  std::printf("%u repetition(s), seed %llu, ring capacity %zu cache lines, AC strip %s\n\n", options.repeat,
              static_cast<unsigned long long>(options.seed), options.run_options.ring_capacity,
              options.ac.strip ? std::to_string(options.ac.strip).c_str() : "unlimited");
  std::fflush(stdout);

  std::vector<MatrixRun> runs;
  ProgressLine progress("exchange");
  for (std::uint64_t bytes : sizes) {
    progress(runs.size(), sizes.size(), "message sizes");
    const auto n = static_cast<Rank>(processes);
    const auto d = static_cast<Rank>(density);
    const sys::CommMatrix m = file_matrix    ? *file_matrix
                              : a.nonuniform ? sys::nonuniform_matrix(n, d, bytes, options.seed)
                                             : sys::fig7_matrix(n, d, bytes, options.seed);
    runs.push_back({file_matrix ? std::string("matrix") : std::to_string(bytes), bytes,
                    sys::run_exchange(*rt, m, options), copy_floor_ms(m.total_bytes(), rt->cores().size())});
  }
  progress.clear();
  print_table(runs, options.schedulers,
              file_matrix    ? "(file)"
              : a.nonuniform ? "msg_unit"
                             : "msg_size",
              options.repeat);
  const std::uint64_t messages = runs.front().report.messages;
  std::printf(
      "\ncomm: from the first process leaving the barrier before the exchange to the last one done\n"
      "comp: make_schedule on one thread (static); Generate_Recv by active messages (drsn); none for ac\n"
      "perm: phases of the schedule; inquiries: busy-lock test-and-sets of all processes in one exchange "
      "(%llu messages)\n",
      static_cast<unsigned long long>(messages));

  if (json) write_exchange_json(a, input, options, *rt, runs, *json);
  if (csv) write_exchange_csv(input, options, *rt, runs, *csv);
  a.trace.write();
  return kExitOk;
}

}  // namespace

ExchangeCommand::ExchangeCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  Args& ex = *args_;
  auto* exchange = command_ =
      app.add_subcommand("exchange", "Run all-to-many personalized exchanges with each scheduler (" +
                                         join(sys::default_exchange_schedulers()) +
                                         "), check every payload byte, and print the papers' table");
  auto* ex_processes = exchange->add_option("--processes,-n", ex.processes, "Number of software processes")
                           ->type_name("N")
                           ->capture_default_str();
  auto* ex_density =
      exchange->add_option("--density,-d", ex.density, "Messages sent and received per process (Fig. 7), at most N")
          ->type_name("D")
          ->capture_default_str();
  auto* ex_bytes = exchange
                       ->add_option("--bytes,-b", ex.bytes,
                                    "Message sizes (with --nonuniform: units), comma-separated; one table row each; "
                                    "K, M, G suffixes are powers of 1024")
                       ->type_name("LIST")
                       ->capture_default_str();
  auto* ex_nonuniform = exchange->add_flag("--nonuniform", ex.nonuniform,
                                           "Wang-Lin-Ranka test set 2: the Fig. 7 pattern with sizes unit x k, k "
                                           "uniform in 1..32, unit = each --bytes value");
  exchange
      ->add_option("--matrix", ex.matrix,
                   "Exchange this Matrix Market file's matrix (row = sender, column = receiver, value = bytes) instead "
                   "of generated ones; --processes, --density, --bytes and --nonuniform are then not used")
      ->type_name("FILE");
  exchange
      ->add_option("--sparse", ex.sparse,
                   "Exchange the halo of this sparse matrix's product y = A x (any coordinate Matrix Market file, A "
                   "square), its rows and x in --blocks contiguous blocks, one process each: a process sends a double "
                   "per entry of its block another block's rows need")
      ->type_name("FILE");
  exchange->add_option("--blocks", ex.blocks, "With --sparse: the blocks of rows, one per process")->type_name("P");
  exchange
      ->add_option("--schedulers", ex.schedulers,
                   "Schedulers to compare, comma-separated: online ac, drsn; static " +
                       join(sys::static_scheduler_names(), ", ") +
                       "; auto (the cheapest of ac, lp, cgm, optimal, optimal-bytes, drsn by the C3 model)")
      ->type_name("LIST")
      ->capture_default_str();
  exchange->add_option("--machine", ex.machine, "Machine file (switchyard model calibrate) that auto charges with")
      ->type_name("FILE");
  exchange->add_option("--repeat,-r", ex.repeat, "Timed repetitions per scheduler and matrix (the median is reported)")
      ->type_name("K")
      ->capture_default_str();
  exchange->add_option("--seed", ex.seed, "Seed of the matrices, the schedulers, DRS_N's orders and the payloads")
      ->type_name("S")
      ->capture_default_str();
  exchange->add_option("--cores", ex.cores, "OS CPUs to run on, e.g. 0,1 or 0-3 (default: all usable)")
      ->type_name("LIST");
  exchange
      ->add_option("--realtime-priority", ex.realtime_priority,
                   "Run the workers under SCHED_FIFO at this priority, 1..99 (root or CAP_SYS_NICE): on a loaded "
                   "machine the slow runs are workers waiting for their core whole scheduler ticks")
      ->type_name("P");
  exchange
      // (--mailbox-capacity), its name before the ring was called the ring, is still accepted.
      ->add_option("--ring-capacity,--mailbox-capacity", ex.ring_capacity,
                   "Cache lines (4 slots of 16 bytes each) per core-to-core ring, 1..16777216 (default: " +
                       std::to_string(RunOptions{}.ring_capacity) + ")")
      ->type_name("LINES");
  exchange
      ->add_option("--ac-strip", ex.ac_strip,
                   "AC strip mining: at most K receives and K sends outstanding per process (default: 0, unlimited)")
      ->type_name("K");
  exchange
      ->add_option("--drsn-retry-yields", ex.drsn_retry_yields,
                   "DRS_N retry delay: yields after a pass in which every destination was busy (default: 1)")
      ->type_name("Y");
  exchange
      ->add_option("--max-phases", ex.max_phases,
                   "optimal-bytes: at most max(K, Δ) phases, trading makespan for fewer phase start-ups (default: "
                   "no cap, makespan = the byte lower bound)")
      ->type_name("K");
  exchange
      ->add_option("--json", ex.json,
                   "Also write the results as JSON to FILE (a result's bytes: the message size, the unit with "
                   "--nonuniform, the largest message with --matrix)")
      ->type_name("FILE");
  exchange->add_option("--csv", ex.csv, "Also write the results as CSV to FILE")->type_name("FILE");
  exchange->add_flag("--interleave", ex.interleave,
                     "Run all the schedulers in one job per matrix, each repetition every scheduler once, in an "
                     "order in which each follows every other equally often (default: one job per scheduler): "
                     "ratios between them on a shared machine");
  exchange
      ->add_option("--execution", ex.execution,
                   "copy: each plan compiled into copies that the cores make straight from sender to receiver; "
                   "messages: every message through the runtime's point-to-point path, as the papers' processes "
                   "send them")
      ->check(CLI::IsMember({"copy", "messages"}))
      ->capture_default_str();
  exchange
      ->add_option("--copy", ex.copy,
                   "copy execution: pull (the receiver's core copies) or push (the sender's core copies; DRS_N "
                   "always pushes)")
      ->check(CLI::IsMember({"pull", "push"}))
      ->capture_default_str();
  exchange->add_flag("--strict", ex.strict,
                     "copy execution of static schedules: a barrier of the cores between phases (the papers' "
                     "synchronous model) instead of running loosely synchronously");
  exchange->add_option("--max-work", ex.max_work, kMaxWorkHelp)->type_name("STEPS");
  ex.trace.add_to(*exchange);
  ex.pattern_options = {ex_processes, ex_density, ex_bytes, ex_nonuniform};
}

ExchangeCommand::~ExchangeCommand() = default;

int ExchangeCommand::run() const {
  args_->pattern_options_given.clear();
  for (const CLI::Option* given : args_->pattern_options) {
    if (given->count() > 0) args_->pattern_options_given.push_back(given->get_name());
  }
  return run_exchange(*args_);
}

}  // namespace switchyard::cli
