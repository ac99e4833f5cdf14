#pragma once
// `switchyard dynamic`: a dynamic communication scheme of Varvarigos sections
// 3.4 and 3.5 (indirect or direct broadcasting, dynamic scattering) under
// per-process Poisson arrivals, its throughput and delays printed beside the
// theorems; with --sweep, the delay-against-load curve and the stability limit
// found against the theorem's.
//
//   switchyard dynamic --scheme indirect|direct|scatter --topology complete|hypercube:D|torus:AxB[xC]|tree:K|FILE.mtx
//                      --processes N (--rate λ | --sweep FROM:TO:STEPS) [--mode slots|real] [--slots K]
//                      [--duration S] [--slot-us US]
//                      [--seed S] [--json FILE]

#include <CLI/CLI.hpp>
#include <memory>

#include "command.hpp"

namespace switchyard::cli {

class DynamicCommand final : public Command {
 public:
  // Adds the subcommand and its options to `app`.
  explicit DynamicCommand(CLI::App& app);
  ~DynamicCommand();

  int run() const override;

  struct Args;  // the option values, as given

 private:
  std::unique_ptr<Args> args_;
};

}  // namespace switchyard::cli
