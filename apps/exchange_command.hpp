#pragma once
// `switchyard exchange`: all-to-many personalized exchanges with each
// scheduler of the papers (the online schemes AC and DRS_N, the static LP, GM,
// CGM, RS_N, RS_NH, the exact optimal (Δ phases) and optimal-bytes (byte lower
// bound), auto), every payload byte of every repetition checked, printed as
// Ranka-Wang-Fox Table 2 / Wang-Lin-Ranka Table 4.
//
//   switchyard exchange [--processes N] [--density D] [--bytes LIST] [--nonuniform]
//                       [--matrix FILE] [--schedulers LIST] [--repeat K] [--json FILE] ...

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class ExchangeCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit ExchangeCommand(CLI::App& app);
  ~ExchangeCommand();

  int run() const override;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
