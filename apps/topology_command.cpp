#include "topology_command.hpp"

#include <cstdio>
#include <string>
#include <switchyard/runtime.hpp>

#include "cli_support.hpp"
#include "cores_option.hpp"

namespace switchyard::cli {

struct TopologyCommand::Args {
  std::string cores;
};

namespace {

int run_command(const TopologyCommand::Args& a) {
  auto rt = make_runtime(a.cores);
  // Workers bind themselves when their threads start, and the Runtime constructor
  // does not wait for that: a trivial job (every worker takes part in every job,
  // and only after binding) makes sure the bindings read back below are final.
  rt->run(1, [](Process&) -> Task<void> { co_return; });
  std::printf("%s", rt->topology().describe().c_str());
  const auto bindings = rt->worker_bindings();
  std::printf("workers (%zu, one per core):\n", bindings.size());
  for (const auto& b : bindings) std::printf("  %s\n", b.c_str());
  return kExitOk;
}

}  // namespace

TopologyCommand::TopologyCommand(CLI::App& app) : args_(std::make_unique<Args>()) {
  command_ = app.add_subcommand("topology", "Show the machine as hwloc sees it and how workers are bound");
  command_->add_option("--cores", args_->cores, "OS CPUs to start workers on, e.g. 0,1 or 0-3 (default: all usable)")
      ->type_name("LIST");
}

TopologyCommand::~TopologyCommand() = default;

int TopologyCommand::run() const { return run_command(*args_); }

}  // namespace switchyard::cli
