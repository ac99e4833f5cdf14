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

namespace switchyard::cli {

class PrimitiveCommand {
 public:
  // Adds the subcommand and its options to `app`.
  explicit PrimitiveCommand(CLI::App& app);
  ~PrimitiveCommand();
  PrimitiveCommand(const PrimitiveCommand&) = delete;
  PrimitiveCommand& operator=(const PrimitiveCommand&) = delete;

  // The command line asked for this subcommand.
  bool selected() const;
  // Runs it and returns the exit code: 0 success, 1 the run failed (a stall, a
  // wrong byte), 2 bad input; the message, if any, is on stderr.
  int run() const;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
  CLI::App* command_ = nullptr;
};

}  // namespace switchyard::cli
