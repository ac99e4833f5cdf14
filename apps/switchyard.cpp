// switchyard: the command-line tool.
//
//   switchyard topology [--cores LIST]
//       What hwloc found, and how each worker thread is bound (topology_command.hpp).
//   switchyard exchange [--processes N] [--density D] [--bytes LIST] [--nonuniform]
//                       [--matrix FILE] [--schedulers LIST] [--repeat K] ...
//       All-to-many personalized exchanges with each scheduler of the papers,
//       every payload byte checked, as the papers' tables (exchange_command.hpp).
//   switchyard schedule --matrix FILE --scheduler NAME [--seed S] [--max-phases K] --out FILE.json
//       One static schedule of a Matrix Market matrix, as JSON (schedule_command.hpp).
//   switchyard phases --processes N --density D --samples S --scheduler NAME
//       Phases and scheduling time of a static scheduler over random Fig. 7
//       matrices (phases_command.hpp).
//   switchyard schedulers
//       The exchange schedulers of the registry: kind, auto's candidates (schedulers_command.hpp).
//   switchyard redistribute --extent E --from DIST --to DIST [--schedule KIND] ...
//       A block-cyclic array moved between process grids (redistribute_command.hpp).
//   switchyard primitive --task NAME --topology SPEC --processes N [--mode slots|mailboxes|both] ...
//       A task of the Varvarigos hierarchy on a virtual network, in slots and on mailboxes (primitive_command.hpp).
//   switchyard collective --op OP --algorithm NAME|auto|all --processes P --bytes LIST ...
//       The C3 paper's k-level algorithms, measured beside the model's units (collective_command.hpp).
//   switchyard model calibrate|predict ...
//       The C3 cost model: this machine's parameters, predicted costs (model_command.hpp).
//   switchyard contention [--senders LIST] [--bytes LIST] [--placement spread|packed|distance] ...
//       Node contention (Wang-Lin-Ranka Table 2) on real cores beside the CM-5's (contention_command.hpp).
//
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <switchyard/errors.hpp>
#include <switchyard/runtime.hpp>
#include <vector>

#include "cli_support.hpp"
#include "collective_command.hpp"
#include "command.hpp"
#include "contention_command.hpp"
#include "dynamic_command.hpp"
#include "exchange_command.hpp"
#include "model_command.hpp"
#include "option_parsers.hpp"
#include "phases_command.hpp"
#include "primitive_command.hpp"
#include "redistribute_command.hpp"
#include "schedule_command.hpp"
#include "schedulers_command.hpp"
#include "topology_command.hpp"

namespace sy = switchyard;
using namespace switchyard::cli;

namespace {

// Parses the command line into app's options: an exit code when that is all
// there is to do (help, version, a usage error), nothing when a command is to run.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  // CLI11 would only say that a subcommand is required.
  std::vector<std::string> commands;
  for (const CLI::App* command : app.get_subcommands({})) commands.push_back(command->get_name());
  if (argc > 1 && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    const std::string first = argv[1];
    if (first != "--help" && first != "-h" && first != "--version") {
      std::cerr << "switchyard: error: " << (first.starts_with('-') ? "unknown option '" : "unknown command '")
                << sy::printable(first) << "': the command comes first (commands: " << join(commands)
                << "; see 'switchyard --help')\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "switchyard: error: " << sy::printable(e.what()) << " (see 'switchyard <command> --help')\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"switchyard: personalized communication between software processes pinned to cores", "switchyard"};
  app.set_version_flag("--version", std::string(SWITCHYARD_VERSION));
  app.require_subcommand(1);

  // In the order `switchyard --help` lists them.
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(std::make_unique<TopologyCommand>(app));
  commands.push_back(std::make_unique<ExchangeCommand>(app));
  commands.push_back(std::make_unique<ScheduleCommand>(app));
  commands.push_back(std::make_unique<PhasesCommand>(app));
  commands.push_back(std::make_unique<SchedulersCommand>(app));
  commands.push_back(std::make_unique<RedistributeCommand>(app));
  commands.push_back(std::make_unique<PrimitiveCommand>(app));
  commands.push_back(std::make_unique<ModelCommand>(app));
  commands.push_back(std::make_unique<CollectiveCommand>(app));
  commands.push_back(std::make_unique<DynamicCommand>(app));
  commands.push_back(std::make_unique<ContentionCommand>(app));

  if (const std::optional<int> done = parse_command_line(app, argc, argv)) return *done;
  return run_reporting_errors([&] {
    speak_on_this_node(sy::this_node() == 0);
    for (const auto& command : commands) {
      if (command->selected()) return command->run();
    }
    return kExitUsage;  // unreachable: a subcommand is required
  });
}
