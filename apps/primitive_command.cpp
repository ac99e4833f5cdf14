#include "primitive_command.hpp"

#include "cli_support.hpp"
#include "json_report.hpp"
#include "option_parsers.hpp"
#include "trace_option.hpp"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/primitives/slot_algorithms.hpp>
#include <switchyard/primitives/slot_mailboxes.hpp>
#include <switchyard/primitives/slot_simulator.hpp>
#include <switchyard/runtime.hpp>
#include <vector>

namespace switchyard::cli {

namespace sp = switchyard::primitives;

struct PrimitiveCommand::Args {
  std::string task, topology = "complete", processes, active = "0.5", bytes = "64", mode = "both", ports = "one",
                    duplex = "full", json;
  TraceOption trace;
};

namespace {

std::string task_names() {
  std::string s;
  for (sp::TaskKind t : sp::kAllTasks) s += (s.empty() ? "" : ", ") + std::string(sp::task_name(t));
  return s;
}

sp::TaskKind parse_task_option(const std::string& text) {
  if (const auto t = sp::parse_task(text)) return *t;
  throw UsageError("--task: unknown task '" + text + "' (valid: " + task_names() + ")");
}

double parse_fraction(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= 0.0 && v <= 1.0)) {
    throw UsageError("--active: '" + text + "' is not a fraction between 0 and 1");
  }
  return v;
}

sp::LinkModel parse_link_model(const std::string& ports, const std::string& duplex) {
  sp::LinkModel m;
  if (ports == "one")
    m.ports = sp::Ports::one_port;
  else if (ports == "all")
    m.ports = sp::Ports::all_port;
  else
    throw UsageError("--ports: '" + ports + "' is not one or all");
  if (duplex == "full")
    m.duplex = sp::Duplex::full;
  else if (duplex == "half")
    m.duplex = sp::Duplex::half;
  else
    throw UsageError("--duplex: '" + duplex + "' is not full or half");
  return m;
}

struct Outcome {
  std::optional<sp::SimulationResult> simulated;
  std::optional<sp::MailboxRunResult> ran;
};

void write_json(OutputFile& out, const std::string& task, const sp::VirtualNetwork& g, sp::LinkModel m,
                const sp::TaskInstance& instance, const sp::SlotAlgorithmResult& routed, const Outcome& o,
                std::uint64_t bytes, const std::string& mode) {
  nlohmann::ordered_json j;
  const sp::SlotBound& bound = routed.bounds.front();
  j["task"] = task;
  j["topology"] = g.name();
  j["processes"] = g.size();
  j["link_model"] = sp::to_string(m);
  j["algorithm"] = routed.algorithm;
  j["mode"] = mode;
  j["active"] = instance.active;
  j["bytes"] = bytes;
  j["slots"] = o.simulated ? o.simulated->slots : o.ran->slots;
  if (o.simulated) j["slots_simulated"] = o.simulated->slots;
  if (o.ran) j["slots_mailboxes"] = o.ran->slots;
  j["bound"] = bound.slots;
  j["bound_kind"] = std::string(sp::bound_kind_name(bound.kind));
  j["bound_name"] = bound.name;
  if (bound.kind == sp::BoundKind::optimum) j["optimum"] = bound.slots;
  j["transmissions"] = routed.schedule.transmissions().size();
  j["wall_ms"] = o.ran ? nlohmann::ordered_json(o.ran->wall_ms) : nlohmann::ordered_json(nullptr);
  j["bytes_verified"] = o.ran ? o.ran->bytes_verified : 0;
  j["verified"] = true;
  write_json_report(out, j);
}

}  // namespace

namespace {

int run_command(const PrimitiveCommand::Args& a) {
  const sp::TaskKind task = parse_task_option(a.task);
  const auto n = parse_uint(a.processes, "--processes", 1, static_cast<std::uint64_t>(sp::kMaxNodes));
  const double fraction = parse_fraction(a.active);
  const auto bytes = parse_uint(a.bytes, "--bytes", 1, std::uint64_t{1} << 30);
  if (a.mode != "slots" && a.mode != "mailboxes" && a.mode != "both") {
    throw UsageError("--mode: '" + a.mode + "' is not slots, mailboxes or both");
  }
  const sp::LinkModel model = parse_link_model(a.ports, a.duplex);
  const sp::VirtualNetwork g = parse_topology(a.topology, n);
  std::optional<OutputFile> json;
  if (!a.json.empty()) json.emplace("--json", a.json);
  sp::TaskOptions options;
  options.active_fraction = fraction;
  if (a.mode != "slots" && task != sp::TaskKind::permutation) {
    // The mailbox program's buffers, bounded below from the task's size alone
    // (a permutation's size is known once it is drawn):
    // refused now, not after routing it (a TE on 5000 nodes takes 15 s to get there).
    const auto [packets, deliveries] = sp::task_size(task, g.size(), options);
    const double at_least = sp::SlotProgram::bytes_at_least(packets, deliveries, bytes);
    const std::string shortfall = memory_shortfall(at_least);
    if (at_least > static_cast<double>(sp::SlotProgram::kMaxBytes) || !shortfall.empty()) {
      throw UsageError("--task " + a.task + " on " + std::to_string(g.size()) + " processes with --bytes " +
                       std::to_string(bytes) + ": " + std::to_string(packets) + " packets and " +
                       std::to_string(deliveries) + " deliveries, whose buffers on mailboxes " +
                       (shortfall.empty() ? "need more than " + human_bytes(at_least) + ", more than the " +
                                                human_bytes(sp::SlotProgram::kMaxBytes) + " allowed"
                                          : shortfall) +
                       "; use --mode slots, fewer processes or fewer bytes");
    }
  }
  sp::TaskInstance instance;
  sp::SlotAlgorithmResult routed;
  try {
    instance = sp::make_task(task, g, options);
    routed = sp::route(g, model, instance);
  } catch (const switchyard::InvalidArgument& e) {
    throw UsageError("--task " + a.task + " on --topology " + a.topology + ": " + e.what());
  }
  std::printf("switchyard primitive: %s on %s (%d processes), %s, %llu-byte packets, %lld packets\n", a.task.c_str(),
              g.name().c_str(), g.size(), sp::to_string(model).c_str(), static_cast<unsigned long long>(bytes),
              static_cast<long long>(instance.packets.size()));
  if (sp::task_uses_active_set(task)) std::printf("active nodes: %zu of %d\n", instance.active.size(), g.size());
  std::printf("algorithm: %s\n", routed.algorithm.c_str());
  const sp::SlotBound& bound = routed.bounds.front();
  const std::string beside =
      std::string(sp::bound_kind_name(bound.kind)) + " " + std::to_string(bound.slots) + " (" + bound.name + ")";
  // An algorithm that moves packets of its own (the PMNB prefix's counts and
  // offsets) hands back the set it moves: the task's packets, then those.
  const sp::PacketSet& packets = routed.packets ? *routed.packets : instance.packets;
  if (routed.packets) {
    std::printf("control packets of the algorithm: %lld\n",
                static_cast<long long>(packets.size() - instance.packets.size()));
  }
  Outcome o;
  if (a.mode != "mailboxes") {
    o.simulated = sp::simulate(g, model, packets, routed.schedule);
    std::printf("slots (simulator): %d    %s, %lld transmissions\n", o.simulated->slots, beside.c_str(),
                static_cast<long long>(o.simulated->transmissions));
  }
  if (a.mode != "slots") {
    const sp::SlotProgram program(g, packets, routed.schedule, bytes);
    Runtime rt(a.trace.runtime_options());
    o.ran = program.run(rt);
    std::printf("slots (mailboxes): %d    %s, %lld messages between neighbours, wall %.3f ms on %zu core(s)\n",
                o.ran->slots, beside.c_str(), static_cast<long long>(o.ran->messages), o.ran->wall_ms,
                rt.cores().size());
  }
  std::printf("every packet verified: yes (%lld deliveries%s)\n", static_cast<long long>(packets.deliveries()),
              o.ran ? (", " + std::to_string(o.ran->bytes_verified) + " bytes compared on mailboxes").c_str() : "");
  if (json) write_json(*json, a.task, g, model, instance, routed, o, bytes, a.mode);
  a.trace.write();
  return kExitOk;
}

}  // namespace

PrimitiveCommand::PrimitiveCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  command_ = app.add_subcommand(
      "primitive",
      "Run a task of the Varvarigos hierarchy on a virtual network: its slot algorithm in the slot simulator and on "
      "real mailboxes (one process per node, every packet verified), slots beside the bound or optimum");
  command_->add_option("--task", args_->task, "Task: " + task_names())->type_name("NAME")->required();
  command_->add_option("--topology", args_->topology, kTopologyHelp)->type_name("SPEC")->capture_default_str();
  command_->add_option("--processes,-n", args_->processes, "Nodes = processes; must agree with --topology")
      ->type_name("N")
      ->required();
  command_
      ->add_option("--active", args_->active,
                   "Share of the nodes in the active set of the selective and partial tasks (drawn with a fixed seed)")
      ->type_name("FRACTION")
      ->capture_default_str();
  command_->add_option("--bytes,-b", args_->bytes, "Bytes per packet on mailboxes")
      ->type_name("B")
      ->capture_default_str();
  command_->add_option("--mode", args_->mode, "slots (simulator), mailboxes, or both")
      ->type_name("MODE")
      ->capture_default_str();
  command_->add_option("--ports", args_->ports, "Link model: one-port (the machine) or all-port")
      ->type_name("one|all")
      ->capture_default_str();
  command_->add_option("--duplex", args_->duplex, "Link model: full or half duplex")
      ->type_name("full|half")
      ->capture_default_str();
  command_->add_option("--json", args_->json, "Also write the result as JSON to FILE")->type_name("FILE");
  args_->trace.add_to(*command_);
}

PrimitiveCommand::~PrimitiveCommand() = default;

int PrimitiveCommand::run() const { return run_command(*args_); }

}  // namespace switchyard::cli
