#pragma once
// `switchyard model`: the C³ cost model (switchyard::model) on the command line.
//
//   switchyard model calibrate [--out machine.json] [--repeat K] [--cores LIST]
//       Measures this machine's core-to-core parameters on the runtime and
//       writes a machine file (model/calibration.hpp says what each is).
//   switchyard model predict --op one-to-all|all-to-one|all-to-all|exchange
//                            --processes P --bytes L [--matrix FILE] [--machine FILE]
//                            [--variant paper|calibrated] [--root R]
//       Every algorithm's units (and the time they stand for), the chosen
//       (cheapest) one first. --op exchange charges the exchange schedulers
//       "auto" chooses among, for the matrix of FILE or, without one, for an
//       all-to-all of L bytes among P processes.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "switchyard/model/machine_file.hpp"

namespace switchyard::cli {

// A --machine option's file, with bad content a UsageError naming the file.
model::MachineFile read_machine_option(const std::string& path);

class ModelCommand {
 public:
  explicit ModelCommand(CLI::App& app);
  ~ModelCommand();
  ModelCommand(const ModelCommand&) = delete;
  ModelCommand& operator=(const ModelCommand&) = delete;

  struct Args;  // the options' values, read by the command's functions

  bool selected() const;
  // Runs it and returns the exit code, 0. Bad input throws UsageError, a failed
  // run its error; main reports both (run_reporting_errors).
  int run() const;

 private:
  std::unique_ptr<Args> args_;
  CLI::App* command_ = nullptr;
  CLI::App* calibrate_ = nullptr;
  CLI::App* predict_ = nullptr;
};

}  // namespace switchyard::cli
