#pragma once
/// @file
/// The all-to-many exchange driver behind `switchyard exchange`: runs one
/// communication matrix with each of a list of schedulers, K times each, every
/// payload byte of every repetition verified, and reports times like the
/// papers' tables (Ranka-Wang-Fox Table 2, Wang-Lin-Ranka Table 4).
///
/// Every scheduler runs through an ExchangePlan (exchange_plan.hpp): "ac" and
/// "drsn" are the online schemes (online.hpp); every other name goes to
/// make_schedule(), so a static scheduler added to its registry is runnable
/// here as it is.
///
/// How one repetition is timed: every process waits in a barrier, reads
/// steady_clock as it leaves, runs the exchange, and reads the clock again once
/// its own sends and receives are complete. comm_ms = (latest end) - (earliest
/// start): from the first process leaving the barrier to the slowest one done.
/// Receive buffers are poisoned before the barrier and verified after a second
/// barrier that follows the clock, so neither costs time on the clock.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "switchyard/model/machine_file.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"
#include "switchyard/schedulers/online.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"  // the names of the schedulers

namespace switchyard::schedulers {

/// What run_exchange() runs and how.
struct ExchangeOptions {
  std::vector<std::string> schedulers;  ///< empty: default_exchange_schedulers(); "auto" may be among them
  std::uint32_t repeat = 5;  ///< K, at least 1
  std::uint64_t seed = 1;  ///< payloads, scheduler seeds, DRS_N's orders
  std::uint64_t max_phases = 0;  ///< optimal-bytes' phase cap (0: none)
  RunOptions run_options;  ///< placement, ring capacity, ...; handlers are added to a copy
  std::optional<model::MachineFile> machine;  ///< "auto": the machine file it charges (none: the default)
  AcOptions ac;  ///< ac's strip mining
  std::uint32_t drsn_retry_yields = 1;  ///< drsn: DrsnOptions::retry_yields
  bool time_generate_recv = true;  ///< also time Generate_Recv by concatenation and by active messages
  /// One job for all the schedulers, every repetition running each once in a
  /// carry-over balanced order (balanced_order.hpp), instead of one job per
  /// scheduler: on a shared machine they then see the same load, and ratios
  /// between them mean something. Every plan is held at once.
  bool interleave = false;
  /// How the plans run (exchange_plan.hpp): compiled copies (the default) or
  /// the runtime's messages; with copies, pull or push, and strict phases.
  ExchangeExecution execution = ExchangeExecution::compiled;
  CopySide copy_side = CopySide::receiver;  ///< copies: ExchangePlanOptions::copy_side
  bool strict = false;  ///< copies: ExchangePlanOptions::strict
};

/// Summary of a series of times (summarize()), in the samples' unit (ms in an ExchangeReport).
struct TimeStats {
  double median = 0,  ///< the middle sample (the mean of the middle two for an even count)
      min = 0,  ///< the fastest sample
      max = 0;  ///< the slowest sample
  /// The tails beside the median: what a loop of many exchanges pays on
  /// average, and its rare slow runs (OSU's -z reports the same).
  double mean = 0,  ///< average of the samples
      p90 = 0,  ///< 90th percentile, nearest rank
      p99 = 0;  ///< 99th percentile, nearest rank
  std::vector<double> samples;  ///< one per repetition, in order
};

/// Median (the mean of the middle two for an even count), min, max, mean, and
/// the 90th and 99th percentiles (nearest rank: the smallest sample at or
/// above that share of the samples) of the samples, which are kept in order.
TimeStats summarize(std::vector<double> samples);

/// One scheduler's line of an ExchangeReport.
struct SchedulerResult {
  std::string scheduler;  ///< as asked for ("auto" included)
  std::string chosen;  ///< "auto": the scheduler it chose
  bool is_static = false;  ///< a static schedule ran (for "auto": the one chosen)
  TimeStats comm_ms;  ///< each repetition's exchange, as described above
  /// Static: make_schedule's wall time on the calling thread (oneTBB limited to
  /// it), median of K plans made: the papers' "comp". ac: 0. drsn: the plan made
  /// by create(), i.e. Generate_Recv by active messages, timed in each
  /// repetition like comm_ms, median.
  TimeStats schedule_ms;
  std::optional<std::uint64_t> phases;  ///< static only
  std::optional<std::uint64_t> inquiries;  ///< drsn only: busy-lock attempts of all processes, median over repetitions
  std::vector<std::uint64_t> inquiry_samples;  ///< drsn only: the busy-lock attempts of each repetition, in order
  bool verified = false;  ///< every byte of every repetition; a wrong byte throws instead
  JobStats job;  ///< the runtime's statistics of the scheduler's job (interleaved: of the one job)
};

/// Generate_Recv's times per repetition, both ways (generate_recv.hpp).
struct GenerateRecvTimes {
  TimeStats concat_ms,  ///< by concatenation (generate_recv_concat)
      am_ms;  ///< by active messages (GenerateRecvByActiveMessages)
};

/// What run_exchange() measured: the matrix's size, and a result per scheduler.
struct ExchangeReport {
  Rank processes = 0;  ///< n, the matrix's size
  std::uint64_t messages = 0,  ///< non-zero entries of the matrix
      total_bytes = 0;  ///< the matrix's bytes in all
  std::vector<SchedulerResult> results;  ///< in the order asked for
  std::optional<GenerateRecvTimes> generate_recv;  ///< when options.time_generate_recv
};

/// The elementary steps run_exchange() may take on a matrix of this shape with
/// these schedulers (empty: the default list) and repetitions: per repetition
/// each static schedule is made (schedule_work) and run, the online schemes run,
/// and Generate_Recv is timed both ways. A bound, for refusing work up front.
double exchange_work(const std::vector<std::string>& schedulers, const MatrixShape& shape, std::uint32_t repeat);

/// Runs the exchange of `m` with every scheduler of options.schedulers on rt.
/// Throws InvalidArgument for an unknown scheduler or repeat == 0 (before
/// running anything), PayloadError naming the scheduler, repetition, message
/// and byte offset if any received byte is wrong, and whatever the runtime
/// throws (StallError, ...).
ExchangeReport run_exchange(Runtime& rt, const CommMatrix& m, const ExchangeOptions& options);

}  // namespace switchyard::schedulers
