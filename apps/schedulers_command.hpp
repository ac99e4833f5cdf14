#pragma once
// `switchyard schedulers`: the exchange schedulers of the registry
// (scheduler_table.hpp), in the order `exchange` runs them by default, each
// with its kind, whether auto may choose it, and what exchange reports for it;
// then redistribute's schedule kinds.
//
//   switchyard schedulers

#include <CLI/CLI.hpp>

#include "command.hpp"

namespace switchyard::cli {

class SchedulersCommand final : public Command {
 public:
  // Adds the subcommand to `app`.
  explicit SchedulersCommand(CLI::App& app);

  int run() const override;
};

}  // namespace switchyard::cli
