#pragma once
// Node contention on real cores: the experiment of Wang, Lin and Ranka's
// Table 2 (../shared/papers/wang-lin-ranka-distributed-scheduling-cm5.md,
// section 1). d senders (ranks 0..d-1) each send one message of the same size
// to one receiver (rank d, as P31 on the CM-5) at once; the receiver's time
// and the senders' largest, smallest and average times are recorded.
//
// A run here is one ExchangePlan of that pattern (exchange_plan.hpp): "ac"
// without the busy lock (every sender at once), "drsn" with it (a sender's
// message moves only while it holds the receiver's busy lock), compiled
// (ExchangeExecution::compiled; push, each sender's core copying into the
// receiver, is the faithful model of many senders writing at one receiver)
// or on the runtime's messages.
//
// How one run is timed: every process waits in a barrier, reads steady_clock
// as it leaves it, runs its part of the exchange and reads the clock again
// when its part is complete: its own time on its own clock, as each CM-5 node
// timed itself. A sender's part is complete when its message may be reused
// (compiled: once every core that copies it has copied; messages: when its
// send completes), the receiver's when every message is in. Processes that
// share a core are resumed by its one worker, so in a compiled run they
// complete together, when their core's copier is done.
//
// Every byte of every run is verified: the receiver's buffers are poisoned
// with the complement of their messages before the barrier, and checked after
// its clock is read. One untimed run first makes the plan's copy programs.
//
// Hardware counters (hardware_counters.hpp), where asked: a group per core,
// opened by the core's first process on its worker thread, read by the first
// of the core's processes to leave the barrier and by the last to complete
// (one read() each, inside the window they bound); the receiver's core and
// the sum over the cores that hold only senders are reported per run.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "switchyard/contention/hardware_counters.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/schedulers/exchange.hpp"
#include "switchyard/schedulers/exchange_plan.hpp"

namespace switchyard::contention {

/// What run_node_contention() runs: where the d senders and the receiver sit, the
/// message size, AC or DRS_N, how the plan executes, and the counters to read.
struct ContentionOptions {
  std::vector<int> sender_cpus;  ///< the OS CPU of each sender: d = its size, at least 1
  int receiver_cpu = 0;  ///< the receiver's; every CPU must be one of the runtime's
  std::uint64_t bytes = 256;  ///< of each message, at least 1
  bool busy_lock = false;  ///< DRS_N's busy lock on the receiver (else AC)
  /// Compiled copy programs or the runtime's messages.
  schedulers::ExchangeExecution execution = schedulers::ExchangeExecution::compiled;
  CopySide copy_side = CopySide::sender;  ///< compiled, without the busy lock (with it: push)
  std::uint32_t repeat = 20;  ///< timed runs, at least 1
  std::uint64_t seed = 1;  ///< payloads and DRS_N's orders
  std::vector<CounterEvent> counters;  ///< events to count per core; empty: none
  EventOpener open = open_event;  ///< how counters are opened (tests pass a stand-in for perf_event_open)
};

/// The counts of one run's window, per event of `events`: the receiver's
/// core, and the cores that hold senders only, summed (empty where the
/// receiver shares every sender's core).
struct CounterRun {
  /// Per event: the receiver's core's count.
  std::vector<std::uint64_t> receiver, senders;  ///< per event: the sum over the cores that hold senders only
};

/// What run_node_contention() measured: per-run times of the receiver and the
/// senders, busy-lock inquiries and counter readings, every byte verified.
struct ContentionResult {
  std::uint32_t senders = 0;  ///< d, the number of senders
  std::uint64_t bytes = 0;  ///< of each message
  /// Per run, on each process's own clock, in microseconds: the receiver's
  /// time; the largest, smallest and average of the senders' times.
  schedulers::TimeStats recv_us, send_max_us, send_min_us, send_avg_us;  ///< the average of the senders' times
  /** @var ContentionResult::send_max_us
      The largest of the senders' times, per run. */
  /** @var ContentionResult::send_min_us
      The smallest of the senders' times, per run. */
  std::vector<std::uint64_t> inquiries;  ///< per run: the senders' busy-lock test-and-sets, summed
  std::vector<std::string> counter_names;  ///< the events that counted on every core (empty: none)
  std::vector<std::string> counters_absent;  ///< why the others did not
  std::vector<CounterRun> counter_runs;  ///< per run
  bool verified = false;  ///< every byte of every run (a wrong one throws)
  JobStats job;  ///< the job's statistics over all runs (the untimed first one included)
};

/// Runs the experiment on rt (one node). Throws InvalidArgument for no sender,
/// a CPU that is not one of rt's, zero bytes or zero repeats, or a runtime
/// across nodes; schedulers::PayloadError if a byte arrives wrong.
ContentionResult run_node_contention(Runtime& rt, const ContentionOptions& options);

/// The CM-5 figures of Wang-Lin-Ranka Table 2, in milliseconds.
struct PaperContentionRow {
  std::uint32_t senders;  ///< d
  /// The receiver's time.
  double recv, send_max, send_min, send_ave;  ///< the senders' average time
  /** @var PaperContentionRow::send_max
      The senders' largest time. */
  /** @var PaperContentionRow::send_min
      The senders' smallest time. */
};
/// Its rows for messages of `bytes` (256 or 4096), or none.
std::span<const PaperContentionRow> paper_table2(std::uint64_t bytes) noexcept;
/// The row for d senders, if the paper has one.
std::optional<PaperContentionRow> paper_table2_row(std::uint64_t bytes, std::uint32_t senders) noexcept;

/// d senders over `cpus` in turn (round robin), as the experiment places them.
std::vector<int> spread_senders(std::uint32_t senders, std::span<const int> cpus);

}  // namespace switchyard::contention
