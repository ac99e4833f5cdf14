#pragma once
// `switchyard schedule`: one static schedule of a Matrix Market matrix, validated
// and written as JSON (a line per phase).
//
//   switchyard schedule --matrix FILE --scheduler NAME [--seed S] [--max-phases K] --out FILE.json

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class ScheduleCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit ScheduleCommand(CLI::App& app);
  ~ScheduleCommand();

  int run() const override;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
