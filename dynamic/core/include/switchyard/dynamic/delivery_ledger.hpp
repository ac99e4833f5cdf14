#pragma once
// The bookkeeping of a slot-mode run, shared by every scheme: each request
// (a broadcast or a scatter) is opened when generated and must be delivered
// exactly once at each of the N - 1 other nodes. Every delivery is checked
// against a bit per (live request, node), so a packet lost (the run ends with
// requests open) or duplicated (a second delivery) is caught in every run, not
// only in tests. It also measures what SlotRunResult reports.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "switchyard/dynamic/slot_run.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::dynamic {

/// A scheme broke the rule every delivery must obey (a duplicate, a delivery to
/// the origin or to nobody's request, a request never completed): a bug, not bad input.
class DeliveryError : public Error {
 public:
  using Error::Error;
};

/// Checks and measures the deliveries of a slot-mode run (see the file's description).
class DeliveryLedger {
 public:
  /// `nodes` >= 2; `options` already validated (check_slot_run_options).
  DeliveryLedger(std::int32_t nodes, const SlotRunOptions& options);

  /// A request generated at `time` (slots) by `origin`; returns its id, which
  /// is recycled once the request is complete (so ids stay below the largest
  /// number of requests open at once).
  std::int32_t open(std::int32_t origin, double time);
  /// Request `id` reaches `node` at the end of slot time `time` - 1 (time is an integer).
  void deliver(std::int32_t id, std::int32_t node, std::int64_t time);
  /// Throws DeliveryError if a request is still open; `slots_run` is the run's
  /// length with the drain. The counts, delays, throughput and backlog verdict.
  SlotRunResult finish(std::int64_t slots_run) const;
  /// Bytes its bookkeeping holds now: two counters per slot (fixed at
  /// construction) and a record and bit row per request id. Ids are recycled,
  /// so this follows the largest number of requests open at once, never the
  /// number generated over the run.
  std::size_t bookkeeping_bytes() const noexcept;

 private:
  struct Request {
    double generated = 0;
    std::int64_t last = 0;  ///< latest delivery so far
    std::int32_t origin = 0;
    std::int32_t received = 0;
  };
  struct Batch {
    double broadcast_sum = 0;
    std::int64_t broadcasts = 0;
    double reception_sum = 0;
    std::int64_t receptions = 0;
  };
  int batch_of(double generated) const noexcept;  ///< -1 outside the window
  void complete(std::int32_t id);

  std::int32_t nodes_;
  std::int64_t words_;  ///< 64-bit words per request's bit row
  std::int64_t slots_;
  double window_begin_;
  std::vector<Request> requests_;
  std::vector<std::uint64_t> seen_;  ///< request id's row: seen_[id * words_ .. (id + 1) * words_)
  std::vector<std::int32_t> free_;
  std::vector<Batch> batches_;
  std::vector<std::int64_t> generated_before_;  ///< per slot t: requests generated in [t - 1, t)
  std::vector<std::int64_t> completed_at_;  ///< per slot t: requests completed at time t
  std::int64_t generated_ = 0;
  std::int64_t delivered_ = 0;
  std::int64_t open_ = 0;
};

/// Throws InvalidArgument naming the bad field: a rate not positive and finite,
/// slots < 16, warmup outside [0, 0.5], batches outside 2..1000, or a run whose
/// bookkeeping would not fit in memory: λ N K requests of N bits each, counted
/// as if none completed (far beyond the stability limit), and two counters per
/// slot, over 4 GiB.
void check_slot_run_options(std::int32_t nodes, const SlotRunOptions& options);

}  // namespace switchyard::dynamic
