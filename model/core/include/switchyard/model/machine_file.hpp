#pragma once
// A machine file: the model's parameters per level of the machine, as JSON,
// written by `switchyard model calibrate` and read by `model predict`,
// `collective` and ExchangePlan's "auto" scheduler.
//
//   {
//     "format": "switchyard-machine/1",
//     "variant": "calibrated",             // or "paper"
//     "levels": {
//       "core": {                           // core to core, inside one node
//         "packet_bytes": 64, "setup": 6.1, "latency": 2.3, "bisection": 1.7,
//         "unit_ns": 9.5, "cores": 2, "routing": "wormhole", "sends": "nonblocking",
//         "topology": "fully_connected", "rows": 1, "cols": 2,
//         "measured": { ... },              // the raw figures behind them (optional)
//         "colocated": false,               // measured in the co-located state (optional)
//         "exchange_correction": {          // optional, see ExchangeCorrection
//           "bytes": [128, 1024, 16384],
//           "messages_per_core": [32, 512],   // optional
//           "ratio": {"ac": [[2.1, 1.0, 0.9], [2.4, 1.4, 1.0]], ...},  // per scale, per size
//           "overhead_ns_per_process": 230}  // optional
//       },
//       "node": null                        // node to node: the MPI transport's, later
//     }
//   }

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "switchyard/model/machine.hpp"

namespace switchyard::model {

/// Measured over predicted time of exchange schedulers on calibration
/// matrices, by scale and message size: what the C³ charges cannot see of a
/// scheduler on this machine (a flood of eager messages costs more per message
/// here than a phase of them, and more so the more messages a core holds; the
/// model's charges are linear in the traffic and cannot tell).
/// ratio[scheduler][t][k] belongs to messages_per_core[t] and bytes[k] (both
/// increasing).
struct ExchangeCorrection {
  std::vector<std::uint64_t> bytes;  ///< the message sizes of the tables' columns, increasing
  /// The messages of each table's calibration exchange over the machine's
  /// cores. Measured at 16 processes x 4 messages alone, ac's ratio over
  /// optimal's at 128 B was 1.65; at 64 x 16 it was 2.1, at 256 x 64 1.9, and
  /// with the small table alone auto took ac for 256 x 64 messages of 128 B,
  /// where optimal and cgm took 0.68-0.84 of its time; with both, it took a
  /// phased scheduler there after each of 6 calibrations, 1.00-1.07 times
  /// the best, where ac took 1.20-1.76 times.
  /// Files without it: one table for every scale (stored as the one key 1).
  std::vector<double> messages_per_core;
  /// Per scheduler: one table per messages_per_core, one ratio per size.
  std::map<std::string, std::vector<std::vector<double>>> ratio;
  /// What an exchange costs beyond any schedule's units, per process: every
  /// process started from the barrier and finished, measured on an exchange
  /// with nothing to send (at 16 processes up to half of the calibration's
  /// fastest exchange; docs/cost-model.md, "Calibration's probes"). The ratios
  /// are over the time less it: taken whole, it raised ac's ratio (fewer
  /// units, the same fixed time) to 1.7 at 256 B against optimal's 1.1, and
  /// auto took optimal for sparse exchanges of 256 B and 2 KiB where ac was up
  /// to 1.35 times faster. Files without it: 0 (their ratios include it).
  double overhead_ns_per_process = 0;
  /// The ratio of `scheduler` for messages of `message_bytes` on average,
  /// `per_core` of them over the cores: interpolated in log(bytes) and in
  /// log(messages per core), constant beyond the ends; 1 when unknown.
  double at(const std::string& scheduler, double message_bytes, double per_core) const;
};

/// A machine file's contents: the model per level of the machine (see the file's description).
struct MachineFile {
  Machine core;  ///< core to core
  std::optional<Machine> node;  ///< node to node (absent until an MPI transport measures it)
  std::map<std::string, double> measured{};  ///< the core level's raw measurements, for the record
  ExchangeCorrection exchange{};  ///< core level; empty: no correction
  /// The core level was measured in the co-located state (colocation.hpp): its
  /// cross-core figures are those of sibling hardware threads, not of the
  /// machine's normal state. Absent in a file: false.
  bool colocated = false;
};

/// The parameters before any calibration: a two-core shared-memory node with
/// the values a calibration typically finds here (used when no file is given).
MachineFile default_machine_file();

/// The file as JSON, in the format parse_machine_file() reads.
std::string to_json(const MachineFile& file);
/// Throws std::invalid_argument naming `source` and the line of a syntax error,
/// or the field that is missing or out of range.
MachineFile parse_machine_file(const std::string& text, const std::string& source);
/// A machine file is a few KiB; a larger input is refused before it is read whole.
inline constexpr std::size_t kMaxMachineFileBytes = std::size_t{16} << 20;
/// Reads and parses the file at `path` (refused beyond kMaxMachineFileBytes); throws std::invalid_argument.
MachineFile read_machine_file(const std::string& path);

}  // namespace switchyard::model
