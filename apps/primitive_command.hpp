#pragma once
// `switchyard primitive`: one task of the Varvarigos hierarchy on a virtual
// network, its slot algorithm run in the slot simulator and/or on real
// mailboxes (one process per node, every packet's bytes verified), with the
// slots beside the task's bound or optimum.
//
//   switchyard primitive --task NAME --topology complete|hypercube:D|torus:AxB[xC]|tree:K|FILE.mtx
//                        --processes N [--active FRACTION] [--bytes B] [--mode slots|mailboxes|both]
//                        [--ports one|all] [--duplex full|half] [--json FILE]

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class PrimitiveCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit PrimitiveCommand(CLI::App& app);
  ~PrimitiveCommand();

  int run() const override;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
