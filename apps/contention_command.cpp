#include "contention_command.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <switchyard/contention/core_distance.hpp>
#include <switchyard/contention/hardware_counters.hpp>
#include <switchyard/contention/node_contention.hpp>
#include <switchyard/median.hpp>
#include <switchyard/runtime.hpp>
#include <vector>

#include "cli_support.hpp"
#include "cores_option.hpp"
#include "json_report.hpp"
#include "option_parsers.hpp"
#include "progress_line.hpp"

namespace switchyard::cli {

namespace con = switchyard::contention;
namespace sys = switchyard::schedulers;

struct ContentionCommand::Args {
  std::string senders = "1,2,4,8,16,31", bytes = "256,4096", execution = "copy", copy = "push", busy_lock = "both",
              placement = "spread", repeat = "20", counters = "on", cores, seed = "1", json;
};

namespace {

constexpr std::uint32_t kMaxSenders = 1023;
constexpr std::uint64_t kMaxBytes = 1ull << 30;

// What the command line asks for, parsed and checked.
struct Setting {
  std::vector<std::uint32_t> senders;
  std::vector<std::uint64_t> sizes;
  sys::ExchangeExecution execution = sys::ExchangeExecution::compiled;
  CopySide side = CopySide::sender;
  std::vector<bool> busy_locks;  // off before on
  std::uint32_t repeat = 20;
  std::uint64_t seed = 1;
};

// The CPUs the senders of one table go to, and how they were chosen.
struct SenderPool {
  std::string placement;  // spread, packed, distance
  std::string distance;  // distance: the class's key, else ""
  std::string label;  // for the table's title
  std::vector<int> cpus;
};

struct Row {
  std::size_t pool = 0;
  bool busy_lock = false;
  con::ContentionResult result;
};

std::vector<std::uint32_t> parse_senders(const std::string& text) {
  const std::string example = " (write e.g. --senders 1,2,4,8,16,31)";
  if (trim(text).empty()) throw UsageError("--senders: the list is empty" + example);
  std::vector<std::uint32_t> senders;
  for (std::string_view item : split(text, ',')) {
    if (trim(item).empty()) throw UsageError("--senders: '" + text + "' has an empty entry" + example);
    const auto d = static_cast<std::uint32_t>(parse_uint(item, "--senders", 1, kMaxSenders));
    if (std::find(senders.begin(), senders.end(), d) != senders.end()) {
      throw UsageError("--senders: " + std::to_string(d) + " is listed twice");
    }
    senders.push_back(d);
  }
  std::sort(senders.begin(), senders.end());
  return senders;
}

Setting parse_setting(const ContentionCommand::Args& a, bool copy_given) {
  Setting s;
  s.senders = parse_senders(a.senders);
  s.sizes = parse_byte_list(a.bytes, kMaxBytes);
  s.execution = a.execution == "messages" ? sys::ExchangeExecution::messages : sys::ExchangeExecution::compiled;
  s.side = a.copy == "pull" ? CopySide::receiver : CopySide::sender;
  if (a.busy_lock != "on") s.busy_locks.push_back(false);
  if (a.busy_lock != "off") s.busy_locks.push_back(true);
  if (copy_given && a.execution == "messages") {
    throw UsageError("--copy " + a.copy +
                     ": only with --execution copy (messages are taken in by the receiver's core)");
  }
  if (a.busy_lock == "on" && a.copy == "pull" && a.execution == "copy") {
    throw UsageError(
        "--copy pull: with the busy lock the sender's core copies while it holds the receiver's lock "
        "(DRS_N pushes); use --copy push or --busy-lock off");
  }
  s.repeat = static_cast<std::uint32_t>(parse_uint(a.repeat, "--repeat", 1, 100'000));
  s.seed = parse_uint(a.seed, "--seed", 0, ~std::uint64_t{0});
  const double largest_d = *std::max_element(s.senders.begin(), s.senders.end());
  const double largest_b = static_cast<double>(*std::max_element(s.sizes.begin(), s.sizes.end()));
  // The receiver's and the senders' buffers, and the d + 1 processes and d messages of a round.
  check_memory(2 * largest_d * (largest_b + kBytesPerMessage) + (largest_d + 1) * kBytesPerProcess,
               "--senders " + a.senders + " with --bytes " + a.bytes);
  return s;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (const int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

// The tables' sender CPUs: the cores other than the receiver's (all of them,
// or the nearest one), or each distance class there is; a class this
// machine lacks is named and left out.
std::vector<SenderPool> sender_pools(const std::string& placement, int receiver, const std::vector<int>& cores) {
  const auto classes = con::cpus_by_distance(receiver, cores);
  std::vector<int> others, nearest;
  for (const auto& c : classes) {
    others.insert(others.end(), c.begin(), c.end());
    if (nearest.empty() && !c.empty()) nearest = {c.front()};
  }
  const std::string alone = " (the only core: the senders share the receiver's)";
  if (placement == "spread") {
    if (others.empty()) return {{"spread", "", "senders on the receiver's CPU" + alone, {receiver}}};
    std::sort(others.begin(), others.end());
    return {{"spread", "", "senders spread over CPUs " + cpu_list(others), others}};
  }
  if (placement == "packed") {
    if (nearest.empty()) return {{"packed", "", "senders on the receiver's CPU" + alone, {receiver}}};
    return {{"packed", "", "every sender on CPU " + std::to_string(nearest.front()), nearest}};
  }
  std::vector<SenderPool> pools;
  for (const con::CoreDistance d : con::kCoreDistances) {
    const auto& cpus = classes[static_cast<std::size_t>(d)];
    if (cpus.empty()) {
      std::printf(
          "placement distance: no CPU here at distance \"%s\" from the receiver's CPU %d: that class is left out\n",
          std::string(con::describe(d)).c_str(), receiver);
      continue;
    }
    pools.push_back({"distance", std::string(con::key(d)),
                     std::string(con::describe(d)) + ": senders spread over CPUs " + cpu_list(cpus), cpus});
  }
  if (pools.empty()) pools.push_back({"distance", "self", "senders on the receiver's CPU" + alone, {receiver}});
  return pools;
}

// The events to count (none where counting is off or nothing opens), after
// saying so in one line.
std::vector<con::CounterEvent> counter_events(bool wanted) {
  if (!wanted) {
    std::printf("hardware counters: off (--counters off)\n");
    return {};
  }
  std::vector<con::CounterEvent> events = con::hardware_events();
  const con::CounterGroup probe(events);
  std::printf("%s\n", con::describe(probe).c_str());
  if (!probe.available()) return {};
  const bool c2c = std::any_of(events.begin(), events.end(), [](const auto& e) { return e.name == "cache-to-cache"; });
  if (!c2c) std::printf("hardware counters: this CPU's vendor names no cache-to-cache transfer event we know\n");
  return probe.counting();
}

std::string cell(double v, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The four figures of a row: receiver, senders' max, min and average.
std::array<double, 4> figures(const con::ContentionResult& r) {
  return {r.recv_us.median, r.send_max_us.median, r.send_min_us.median, r.send_avg_us.median};
}
std::array<double, 4> figures(const con::PaperContentionRow& p) { return {p.recv, p.send_max, p.send_min, p.send_ave}; }

std::string ratio_cells(const std::optional<std::array<double, 4>>& v,
                        const std::optional<std::array<double, 4>>& base) {
  std::string out;
  for (std::size_t i = 0; i < 4; ++i) {
    out += v && base && (*base)[i] > 0 ? cell((*v)[i] / (*base)[i], "%7.2f") : std::string("      -");
  }
  return out;
}

// One table of the paper's layout: a row per d, measured beside the CM-5.
void print_table(const std::vector<const Row*>& rows) {
  const con::ContentionResult& first = rows.front()->result;
  const bool busy = rows.front()->busy_lock;
  const auto paper_base = con::paper_table2_row(first.bytes, 1);
  const std::optional<std::array<double, 4>> base = first.senders == 1 ? std::optional(figures(first)) : std::nullopt;
  std::printf("  %-4s %36s%s   %28s   %28s   %28s\n", "", "measured (us, median of runs)", busy ? "       " : "",
              "CM-5 (ms, Table 2)", "ratio to d = 1: measured", "ratio to d = 1: CM-5");
  std::printf("  %-4s %9s%9s%9s%9s%s   %7s%7s%7s%7s   %7s%7s%7s%7s   %7s%7s%7s%7s\n", "d", "recv", "max", "min", "ave",
              busy ? "    inq" : "", "recv", "max", "min", "ave", "recv", "max", "min", "ave", "recv", "max", "min",
              "ave");
  for (const Row* row : rows) {
    const con::ContentionResult& r = row->result;
    const auto m = figures(r);
    std::string line = cell(r.senders, "  %-4.0f ");
    for (const double v : m) line += cell(v, "%9.2f");
    if (busy) {
      std::vector<double> inq(r.inquiries.begin(), r.inquiries.end());
      line += cell(median(inq), "%7.0f");
    }
    line += "   ";
    const auto paper = con::paper_table2_row(r.bytes, r.senders);
    for (std::size_t i = 0; i < 4; ++i) line += paper ? cell(figures(*paper)[i], "%7.3f") : std::string("      -");
    line += "   " + ratio_cells(m, base) + "   ";
    line += ratio_cells(paper ? std::optional(figures(*paper)) : std::nullopt,
                        paper_base ? std::optional(figures(*paper_base)) : std::nullopt);
    std::printf("%s\n", line.c_str());
  }
  if (!base) std::printf("  (no d = 1 in --senders: no measured ratios)\n");
}

// The counts of one window per event, the median over the runs.
std::vector<double> counter_medians(const con::ContentionResult& r, bool receiver) {
  std::vector<double> out;
  for (std::size_t e = 0; e < r.counter_names.size(); ++e) {
    std::vector<double> samples;
    for (const con::CounterRun& run : r.counter_runs) {
      const auto& v = receiver ? run.receiver : run.senders;
      if (e < v.size()) samples.push_back(static_cast<double>(v[e]));
    }
    out.push_back(samples.empty() ? 0 : median(std::move(samples)));
  }
  return out;
}

void print_counters(const std::vector<const Row*>& rows) {
  if (rows.front()->result.counter_names.empty()) return;
  std::printf("  counters, median per run (receiver's core | cores of senders only):\n");
  for (const Row* row : rows) {
    const con::ContentionResult& r = row->result;
    const auto rc = counter_medians(r, true), sc = counter_medians(r, false);
    std::string line = "  d = " + std::to_string(r.senders) + ":";
    for (std::size_t e = 0; e < rc.size(); ++e) line += " " + r.counter_names[e] + " " + cell(rc[e], "%.0f");
    line += " |";
    for (std::size_t e = 0; e < sc.size(); ++e) line += " " + r.counter_names[e] + " " + cell(sc[e], "%.0f");
    std::printf("%s\n", line.c_str());
  }
}

nlohmann::ordered_json four(const std::array<double, 4>& v) {
  return {{"recv", v[0]}, {"max", v[1]}, {"min", v[2]}, {"ave", v[3]}};
}

nlohmann::ordered_json row_json(const Row& row, const SenderPool& pool, const Row* d1) {
  const con::ContentionResult& r = row.result;
  nlohmann::ordered_json j;
  j["placement"] = pool.placement;
  j["distance"] = pool.distance.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(pool.distance);
  j["sender_cpus"] = pool.cpus;
  j["busy_lock"] = row.busy_lock;
  j["bytes"] = r.bytes;
  j["senders"] = r.senders;
  j["recv_us"] = time_json(r.recv_us);
  j["send_max_us"] = time_json(r.send_max_us);
  j["send_min_us"] = time_json(r.send_min_us);
  j["send_avg_us"] = time_json(r.send_avg_us);
  const auto m = figures(r);
  j["ratio_to_d1"] = nullptr;
  if (d1) {
    const auto b = figures(d1->result);
    j["ratio_to_d1"] = four({m[0] / b[0], m[1] / b[1], m[2] / b[2], m[3] / b[3]});
  }
  const auto paper = con::paper_table2_row(r.bytes, r.senders);
  const auto paper_base = con::paper_table2_row(r.bytes, 1);
  j["paper_ms"] = paper ? four(figures(*paper)) : nlohmann::ordered_json(nullptr);
  j["paper_ratio_to_d1"] = nullptr;
  if (paper && paper_base) {
    const auto p = figures(*paper), b = figures(*paper_base);
    j["paper_ratio_to_d1"] = four({p[0] / b[0], p[1] / b[1], p[2] / b[2], p[3] / b[3]});
  }
  if (row.busy_lock) j["inquiries"] = r.inquiries;
  j["counters"] = nullptr;
  if (!r.counter_names.empty()) {
    nlohmann::ordered_json receiver, senders;
    const auto rc = counter_medians(r, true), sc = counter_medians(r, false);
    for (std::size_t e = 0; e < r.counter_names.size(); ++e) {
      receiver[r.counter_names[e]] = rc[e];
      senders[r.counter_names[e]] = sc[e];
    }
    j["counters"] = {{"receiver_core", receiver}, {"sender_cores", senders}};
  }
  j["verified"] = r.verified;
  return j;
}

void write_json(const ContentionCommand::Args& a, const Setting& s, const Runtime& rt, int receiver,
                const std::vector<SenderPool>& pools, const std::vector<Row>& rows,
                const std::vector<con::CounterEvent>& events, OutputFile& out) {
  nlohmann::ordered_json j;
  j["command"] = "contention";
  j["paper"] = "Wang-Lin-Ranka Table 2: a 32-node CM-5, P31 receiving, times in ms";
  j["cores"] = rt.cores().size();
  j["core_list"] = rt.cores();
  j["receiver_cpu"] = receiver;
  j["execution"] = a.execution;
  if (a.execution == "copy") j["copy"] = a.copy;
  j["repeat"] = s.repeat;
  j["seed"] = s.seed;
  j["counters"] = nlohmann::ordered_json::array();
  for (const con::CounterEvent& e : events) j["counters"].push_back({{"name", e.name}, {"source", e.source}});
  const auto classes = con::cpus_by_distance(receiver, rt.cores());
  for (const con::CoreDistance d : con::kCoreDistances) {
    j["distance_classes"][std::string(con::key(d))] = classes[static_cast<std::size_t>(d)];
  }
  for (const std::uint64_t bytes : {256u, 4096u}) {
    for (const con::PaperContentionRow& p : con::paper_table2(bytes)) {
      j["paper_table2"][std::to_string(bytes)].push_back({{"senders", p.senders}, {"ms", four(figures(p))}});
    }
  }
  j["results"] = nlohmann::ordered_json::array();
  for (const Row& row : rows) {
    const Row* d1 = nullptr;
    for (const Row& other : rows) {
      if (other.pool == row.pool && other.busy_lock == row.busy_lock && other.result.bytes == row.result.bytes &&
          other.result.senders == 1)
        d1 = &other;
    }
    j["results"].push_back(row_json(row, pools[row.pool], d1));
  }
  write_json_report(out, j);
}

int run_contention(const ContentionCommand::Args& a, bool copy_given) {
  const Setting s = parse_setting(a, copy_given);
  std::optional<OutputFile> json;
  if (!a.json.empty()) json.emplace("--json", a.json);
  auto rt = make_runtime(a.cores);
  if (rt->nodes() > 1) throw UsageError("contention: runs on one node, not across " + std::to_string(rt->nodes()));
  const int receiver = rt->cores().front();
  const std::string how = a.execution == "messages" ? "on the runtime's messages"
                          : a.copy == "push"        ? "compiled, push: each sender's core copies into the receiver"
                                                    : "compiled, pull: the receiver's core copies every message";
  std::printf(
      "switchyard contention: Wang-Lin-Ranka Table 2 on %s: d senders (ranks 0..d-1) each send one message "
      "to the receiver (rank d) at once\nexecution %s; receiver on CPU %d; %u timed run(s) per row, seed %llu\n",
      where_it_runs(*rt).c_str(), how.c_str(), receiver, s.repeat, static_cast<unsigned long long>(s.seed));
  const std::vector<SenderPool> pools = sender_pools(a.placement, receiver, rt->cores());
  const std::vector<con::CounterEvent> events = counter_events(a.counters == "on");
  std::printf("\n");
  std::fflush(stdout);

  std::vector<Row> rows;
  const std::size_t total = pools.size() * s.busy_locks.size() * s.sizes.size() * s.senders.size();
  ProgressLine progress("contention");
  for (std::size_t p = 0; p < pools.size(); ++p) {
    for (const bool busy : s.busy_locks) {
      for (const std::uint64_t bytes : s.sizes) {
        std::vector<const Row*> table;
        const std::size_t table_start = rows.size();
        for (const std::uint32_t d : s.senders) {
          progress(rows.size(), total, "rows");
          con::ContentionOptions o{.sender_cpus = con::spread_senders(d, pools[p].cpus),
                                   .receiver_cpu = receiver,
                                   .bytes = bytes,
                                   .busy_lock = busy,
                                   .execution = s.execution,
                                   .copy_side = busy ? CopySide::sender : s.side,
                                   .repeat = s.repeat,
                                   .seed = s.seed,
                                   .counters = events};
          rows.push_back({p, busy, con::run_node_contention(*rt, o)});
        }
        progress.clear();
        for (std::size_t i = table_start; i < rows.size(); ++i) table.push_back(&rows[i]);
        std::printf(
            "%s, busy lock %s, %s\n", human_bytes(static_cast<double>(bytes)).c_str(),
            busy ? "on (DRS_N: one sender at a time holds the receiver's lock)" : "off (AC: every sender at once)",
            pools[p].label.c_str());
        print_table(table);
        print_counters(table);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  std::printf(
      "recv: the receiver's own time, from leaving the barrier to having every message in; max, min, ave: over the "
      "senders of a run, each sender's own time from leaving the barrier to its send being complete; each figure the "
      "median over the runs (steady_clock, us). inq: busy-lock test-and-sets of all senders in a run. CM-5: the "
      "paper's figures (ms).\nevery payload byte of every run verified: yes\n");
  if (json) write_json(a, s, *rt, receiver, pools, rows, events, *json);
  return kExitOk;
}

}  // namespace

ContentionCommand::ContentionCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  Args& c = *args_;
  command_ = app.add_subcommand("contention",
                                "Node contention (Wang-Lin-Ranka Table 2): d senders each send one message to one "
                                "receiver at once; the receiver's and the senders' times beside the CM-5's");
  command_->add_option("--senders", c.senders, "Numbers of senders d, comma-separated, each 1..1023; a row each")
      ->type_name("LIST")
      ->capture_default_str();
  command_->add_option("--bytes,-b", c.bytes, "Message sizes, comma-separated (K, M, G: powers of 1024); a table each")
      ->type_name("LIST")
      ->capture_default_str();
  command_
      ->add_option("--execution", c.execution,
                   "copy: compiled copies, sender to receiver; messages: the runtime's point-to-point messages")
      ->check(CLI::IsMember({"copy", "messages"}))
      ->capture_default_str();
  command_
      ->add_option("--copy", c.copy,
                   "copy execution: push (each sender's core copies into the receiver: many writers at one "
                   "receiver, the faithful model) or pull (the receiver's core copies every message)")
      ->check(CLI::IsMember({"push", "pull"}))
      ->capture_default_str();
  command_
      ->add_option("--busy-lock", c.busy_lock,
                   "off: every sender at once (AC); on: a sender's message moves only while it holds the receiver's "
                   "busy lock (DRS_N); both: a table each")
      ->check(CLI::IsMember({"off", "on", "both"}))
      ->capture_default_str();
  command_
      ->add_option("--placement", c.placement,
                   "spread: the senders in turn over every core but the receiver's; packed: all on the core nearest "
                   "the receiver's; distance: a table per class of hwloc distance from the receiver's core (same "
                   "core, same L2, same L3, same NUMA node, other NUMA node) that this machine has")
      ->check(CLI::IsMember({"spread", "packed", "distance"}))
      ->capture_default_str();
  command_->add_option("--repeat,-r", c.repeat, "Timed runs per row (the median is reported), after an untimed one")
      ->type_name("K")
      ->capture_default_str();
  command_
      ->add_option("--counters", c.counters,
                   "Hardware counters (perf_event_open: cycles, cache misses, cache-to-cache transfers) per core "
                   "around each run, where the machine has a PMU")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  command_->add_option("--cores", c.cores, "OS CPUs to run on, the first the receiver's (default: all usable)")
      ->type_name("LIST");
  command_->add_option("--seed", c.seed, "Seed of the payloads and of DRS_N's orders")
      ->type_name("S")
      ->capture_default_str();
  command_->add_option("--json", c.json, "Also write the results as JSON to FILE (scripts/plot.py draws them)")
      ->type_name("FILE");
}

ContentionCommand::~ContentionCommand() = default;

int ContentionCommand::run() const { return run_contention(*args_, command_->get_option("--copy")->count() > 0); }

}  // namespace switchyard::cli
