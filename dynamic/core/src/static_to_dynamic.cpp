#include "switchyard/dynamic/static_to_dynamic.hpp"

#include <algorithm>
#include <vector>

#include "switchyard/dynamic/arrival_streams.hpp"
#include "switchyard/dynamic/delivery_ledger.hpp"

namespace switchyard::dynamic {

namespace {

// One execution's deliveries, turned into the ledger's absolute times.
class PeriodSink final : public DeliverySink {
 public:
  PeriodSink(DeliveryLedger& ledger, std::span<const std::int32_t> ids, std::int64_t start)
      : ledger_(ledger), ids_(ids), start_(start) {}
  void deliver(std::int32_t request, std::int32_t node, std::int64_t slot) override {
    if (request < 0 || static_cast<std::size_t>(request) >= ids_.size() || slot < 1) {
      throw DeliveryError("a static algorithm delivered request " + std::to_string(request) + " of " +
                          std::to_string(ids_.size()) + " in slot " + std::to_string(slot));
    }
    ledger_.deliver(ids_[static_cast<std::size_t>(request)], node, start_ + slot);
    last_ = std::max(last_, slot);
  }
  std::int64_t last() const noexcept { return last_; }

 private:
  DeliveryLedger& ledger_;
  std::span<const std::int32_t> ids_;
  std::int64_t start_;
  std::int64_t last_ = 0;
};

}  // namespace

SlotRunResult run_static_to_dynamic(StaticAlgorithm& algorithm, const SlotRunOptions& options) {
  const std::int32_t n = algorithm.nodes();
  check_slot_run_options(n, options);
  ArrivalStreams arrivals(n, options.rate, options.seed);
  DeliveryLedger ledger(n, options);
  const double x = algorithm.per_request_slots(), v = algorithm.fixed_slots();
  const auto stop = static_cast<double>(options.slots);
  std::vector<std::int32_t> ids, origins;
  std::int64_t start = 0, periods = 0, over_bound = 0, largest = 0;
  for (;;) {
    // The execution starting now serves every request generated before now (its prefix counts them).
    ids.clear();
    origins.clear();
    arrivals.until(std::min(static_cast<double>(start), stop), [&](std::int32_t node, double time) {
      ids.push_back(ledger.open(node, time));
      origins.push_back(node);
    });
    if (static_cast<double>(start) >= stop && ids.empty()) break;
    PeriodSink sink(ledger, ids, start);
    const std::int64_t length = algorithm.execute(origins, sink);
    if (length < sink.last()) {
      throw DeliveryError(algorithm.name() + ": an execution of " + std::to_string(length) +
                          " slots delivered in slot " + std::to_string(sink.last()));
    }
    const auto m = static_cast<double>(origins.size());
    over_bound += static_cast<double>(length) > x * m + v + 1e-9;
    largest = std::max<std::int64_t>(largest, static_cast<std::int64_t>(origins.size()));
    ++periods;
    // An execution of no slots (no request, no prefix to run) lets one slot pass.
    start += std::max<std::int64_t>(length, 1);
  }
  SlotRunResult out = ledger.finish(start);
  out.periods = periods;
  out.periods_over_bound = over_bound;
  out.largest_period_requests = largest;
  return out;
}

}  // namespace switchyard::dynamic
