#pragma once
// `switchyard model`: the C³ cost model (switchyard::model) on the command line.
//
//   switchyard model calibrate [--out machine.json] [--repeat K] [--cores LIST]
//       Measures this machine's core-to-core parameters on the runtime and
//       writes a machine file (model/calibration.hpp says what each is).
//   switchyard model probe [--rounds N] [--repeat K] [--pause MS]
//       The host's state now, round by round: the co-location check calibrate
//       makes around every round (model/colocation.hpp), whether the two cores
//       are in the co-located state, in 0.2 s, for scripts that measure in the
//       normal state; and the host figures calibrate records
//       (model/host_state.hpp), with each one's spread over the rounds.
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

#include "command.hpp"
#include "switchyard/model/machine_file.hpp"

namespace switchyard::cli {

// A --machine option: a machine file (bad content: a UsageError naming the
// file), or `delta` / `intel-delta-256`, the paper's 256-processor Intel Delta
// of Fig. 3 (the paper's model; a 16 x 16 mesh, so at most 256 processes).
model::MachineFile read_machine_option(const std::string& path);

// The --machine option's machine for p processes, charged with --variant
// (empty: the machine's own): UsageError for an unknown variant or a p the
// machine cannot hold.
model::Machine machine_for(const model::MachineFile& file, const std::string& variant, std::uint64_t processes);

class ModelCommand final : public Command {
 public:
  explicit ModelCommand(CLI::App& app);
  ~ModelCommand();

  struct Args;  // the options' values, read by the command's functions

  int run() const override;

 private:
  std::unique_ptr<Args> args_;
  CLI::App* calibrate_ = nullptr;
  CLI::App* predict_ = nullptr;
  CLI::App* probe_ = nullptr;
};

}  // namespace switchyard::cli
