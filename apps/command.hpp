#pragma once
// What main() asks of every subcommand of the CLI: whether the command line
// chose it, and running it. Each command is one class in its own file, which
// adds its subcommand and options to the app in its constructor.

#include <CLI/CLI.hpp>

namespace switchyard::cli {

class Command {
 public:
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  // The command line asked for this subcommand.
  bool selected() const { return command_->parsed(); }
  // Runs it and returns the exit code, 0. Bad input throws UsageError, a failed
  // run (a stall, a wrong byte) its error; main reports both (run_reporting_errors).
  virtual int run() const = 0;

 protected:
  Command() = default;
  CLI::App* command_ = nullptr;  // set by the constructor that adds the subcommand
};

}  // namespace switchyard::cli
