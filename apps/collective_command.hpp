#pragma once
// `switchyard collective`: the C3 paper's k-level algorithms for one-to-all,
// all-to-one or all-to-all on the runtime, every byte verified, each one's
// measured time beside the units the model predicts for the machine file, the
// Spearman rank agreement of the two orders, the algorithm `auto` picks and
// the one a fixed size-keyed table (Open MPI's) picks, with their regrets.
//
//   switchyard collective --op one-to-all|all-to-one|all-to-all
//                         --algorithm NAME|auto|all --processes P --bytes LIST
//                         [--repeat K] [--machine FILE] [--variant paper|calibrated] [--json FILE]

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class CollectiveCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit CollectiveCommand(CLI::App& app);
  ~CollectiveCommand();

  int run() const override;

 private:
  struct Args;
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
