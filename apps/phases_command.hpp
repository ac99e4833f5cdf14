#pragma once
// `switchyard phases`: phases and scheduling time of a static scheduler over
// random Fig. 7 matrices (Ranka-Wang-Fox Table 4's perm and comp).
//
//   switchyard phases --processes N --density D --samples S --scheduler NAME [--seed S] [--json FILE]

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class PhasesCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit PhasesCommand(CLI::App& app);
  ~PhasesCommand();

  int run() const override;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
