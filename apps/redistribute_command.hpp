#pragma once
// `switchyard redistribute`: an array of doubles moved from one block-cyclic
// layout to another on the runtime, with each schedule kind of
// switchyard::schedulers::redistribution (Guo-Nakata-Yamashita's tables, their Fig. 1 and
// Fig. 4 baselines, and the optimal schedulers), every element verified.
//
//   switchyard redistribute --extent 120000 --from 'cyclic(6)@4' --to 'cyclic(2)@4'
//                           [--schedule naive|offset|table|optimal|optimal-bytes|all]
//                           [--repeat K] [--json FILE] [--dump-tables FILE]

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class RedistributeCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit RedistributeCommand(CLI::App& app);
  ~RedistributeCommand();

  int run() const override;

 private:
  struct Args;
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
