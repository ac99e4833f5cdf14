#pragma once
// `switchyard contention`: Wang, Lin and Ranka's node-contention table (Table
// 2) reproduced on the runtime: d senders each send one message to one
// receiver at once, the receiver's time and the senders' max/min/avg beside
// the CM-5's, and each as a ratio to d = 1 (contention_command.cpp).
//
//   switchyard contention [--senders LIST] [--bytes LIST] [--execution copy|messages] [--copy push|pull]
//                         [--busy-lock off|on|both] [--placement spread|packed|distance] [--repeat K]
//                         [--counters on|off] [--cores LIST] [--seed S] [--json FILE]

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class ContentionCommand final : public Command {
 public:
  explicit ContentionCommand(CLI::App& app);
  ~ContentionCommand();

  int run() const override;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
