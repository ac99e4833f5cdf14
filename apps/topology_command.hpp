#pragma once
// `switchyard topology`: what hwloc found, and how each worker thread is bound.
//
//   switchyard topology [--cores LIST]

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class TopologyCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit TopologyCommand(CLI::App& app);
  ~TopologyCommand();

  int run() const override;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
