#include "switchyard/dynamic/delivery_ledger.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace switchyard::dynamic {

namespace {

// Student t's 97.5 % quantile for 1 .. 30 degrees of freedom (then 1.96 would do; 2.04 is safe).
double t_quantile(std::int64_t degrees) {
  static constexpr double kT[] = {12.706, 4.303, 2.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                  2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  return degrees <= 30 ? kT[degrees - 1] : 2.04;
}

// The overall mean (total / count over all batches) and the batch-means half-width.
template <class Batch, class Sum, class Count>
DelayEstimate estimate(const std::vector<Batch>& batches, Sum sum, Count count) {
  DelayEstimate e;
  double total = 0;
  std::vector<double> means;
  for (const auto& b : batches) {
    total += sum(b);
    e.samples += count(b);
    if (count(b) > 0) means.push_back(sum(b) / static_cast<double>(count(b)));
  }
  if (e.samples == 0) return e;
  e.mean = total / static_cast<double>(e.samples);
  if (means.size() < 2) return e;
  double centre = 0;
  for (double m : means) centre += m;
  centre /= static_cast<double>(means.size());
  double squares = 0;
  for (double m : means) squares += (m - centre) * (m - centre);
  const auto b = static_cast<std::int64_t>(means.size());
  e.half_width = t_quantile(b - 1) * std::sqrt(squares / static_cast<double>(b - 1) / static_cast<double>(b));
  return e;
}

}  // namespace

void check_slot_run_options(std::int32_t nodes, const SlotRunOptions& o) {
  if (nodes < 2) throw InvalidArgument("a dynamic scheme needs at least 2 nodes, not " + std::to_string(nodes));
  if (!(o.rate > 0) || !std::isfinite(o.rate)) {
    throw InvalidArgument("rate: λ must be positive and finite, not " + number_text(o.rate));
  }
  if (o.slots < 16) throw InvalidArgument("slots: a run needs at least 16 slots, not " + std::to_string(o.slots));
  if (!(o.warmup >= 0 && o.warmup <= 0.5)) {
    throw InvalidArgument("warmup: the share of the run left out must be in [0, 0.5], not " + std::to_string(o.warmup));
  }
  if (o.batches < 2 || o.batches > 1000) {
    throw InvalidArgument("batches: must be between 2 and 1000, not " + std::to_string(o.batches));
  }
  const double requests = o.rate * nodes * static_cast<double>(o.slots);
  // Per request: its record and bit row; per slot: generated_before_ and completed_at_.
  const double bytes = requests * (nodes / 8.0 + 48.0) + static_cast<double>(o.slots) * 2 * sizeof(std::int64_t);
  if (bytes > 4.0 * (1ull << 30)) {
    throw InvalidArgument("rate " + number_text(o.rate) + " over " + std::to_string(o.slots) + " slots on " +
                          std::to_string(nodes) + " nodes: about " + number_text(requests) + " requests and " +
                          std::to_string(o.slots) + " slots, whose bookkeeping could need " +
                          number_text(bytes / (1 << 20)) + " MiB (over 4 GiB): use fewer slots or a lower rate");
  }
}

DeliveryLedger::DeliveryLedger(std::int32_t nodes, const SlotRunOptions& o)
    : nodes_(nodes),
      words_((nodes + 63) / 64),
      slots_(o.slots),
      window_begin_(o.warmup * static_cast<double>(o.slots)),
      batches_(static_cast<std::size_t>(o.batches)),
      generated_before_(static_cast<std::size_t>(o.slots) + 1, 0),
      completed_at_(static_cast<std::size_t>(o.slots) + 1, 0) {}

int DeliveryLedger::batch_of(double generated) const noexcept {
  if (generated < window_begin_ || generated >= static_cast<double>(slots_)) return -1;
  const double share = (generated - window_begin_) / (static_cast<double>(slots_) - window_begin_);
  return std::min(static_cast<int>(share * static_cast<double>(batches_.size())),
                  static_cast<int>(batches_.size()) - 1);
}

std::int32_t DeliveryLedger::open(std::int32_t origin, double time) {
  std::int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<std::int32_t>(requests_.size());
    requests_.emplace_back();
    seen_.resize(seen_.size() + static_cast<std::size_t>(words_), 0);
  }
  requests_[static_cast<std::size_t>(id)] = {time, 0, origin, 0};
  ++generated_;
  ++open_;
  if (time < static_cast<double>(slots_)) ++generated_before_[static_cast<std::size_t>(std::floor(time)) + 1];
  return id;
}

void DeliveryLedger::deliver(std::int32_t id, std::int32_t node, std::int64_t time) {
  if (id < 0 || static_cast<std::size_t>(id) >= requests_.size() || node < 0 || node >= nodes_) {
    throw DeliveryError("delivery of request " + std::to_string(id) + " to node " + std::to_string(node) +
                        ": no such request or node");
  }
  Request& r = requests_[static_cast<std::size_t>(id)];
  std::uint64_t& word = seen_[static_cast<std::size_t>(id * words_ + node / 64)];
  const std::uint64_t bit = std::uint64_t{1} << (node % 64);
  if (node == r.origin || (word & bit) || static_cast<double>(time) <= r.generated) {
    throw DeliveryError("request " + std::to_string(id) + " from node " + std::to_string(r.origin) +
                        " delivered to node " + std::to_string(node) + " at " + std::to_string(time) +
                        ((word & bit)       ? ": a second time"
                         : node == r.origin ? ": its origin"
                                            : ": before it was generated"));
  }
  word |= bit;
  ++delivered_;
  r.last = std::max(r.last, time);
  if (const int b = batch_of(r.generated); b >= 0) {
    batches_[static_cast<std::size_t>(b)].reception_sum += static_cast<double>(time) - r.generated;
    ++batches_[static_cast<std::size_t>(b)].receptions;
  }
  if (++r.received == nodes_ - 1) complete(id);
}

void DeliveryLedger::complete(std::int32_t id) {
  const Request& r = requests_[static_cast<std::size_t>(id)];
  if (const int b = batch_of(r.generated); b >= 0) {
    batches_[static_cast<std::size_t>(b)].broadcast_sum += static_cast<double>(r.last) - r.generated;
    ++batches_[static_cast<std::size_t>(b)].broadcasts;
  }
  if (r.last <= slots_) ++completed_at_[static_cast<std::size_t>(r.last)];
  std::fill_n(seen_.begin() + id * words_, words_, 0);
  free_.push_back(id);
  --open_;
}

std::size_t DeliveryLedger::bookkeeping_bytes() const noexcept {
  return requests_.capacity() * sizeof(Request) + seen_.capacity() * sizeof(std::uint64_t) +
         free_.capacity() * sizeof(std::int32_t) + batches_.capacity() * sizeof(Batch) +
         (generated_before_.capacity() + completed_at_.capacity()) * sizeof(std::int64_t);
}

SlotRunResult DeliveryLedger::finish(std::int64_t slots_run) const {
  if (open_ != 0) {
    throw DeliveryError(std::to_string(open_) + " request(s) not delivered everywhere when the run stopped");
  }
  SlotRunResult out;
  out.generated = generated_;
  out.delivered = delivered_;
  out.slots_run = slots_run;
  out.broadcast_delay = estimate(
      batches_, [](const Batch& b) { return b.broadcast_sum; }, [](const Batch& b) { return b.broadcasts; });
  out.reception_delay = estimate(
      batches_, [](const Batch& b) { return b.reception_sum; }, [](const Batch& b) { return b.receptions; });
  // Q(t) for t = 1 .. K: generated before t, less completed by t.
  std::int64_t backlog = 0, completed = 0;
  double second = 0, last = 0;
  const std::int64_t k = slots_;
  for (std::int64_t t = 1; t <= k; ++t) {
    backlog += generated_before_[static_cast<std::size_t>(t)] - completed_at_[static_cast<std::size_t>(t)];
    completed += completed_at_[static_cast<std::size_t>(t)];
    if (t > k / 4 && t <= k / 2) second += static_cast<double>(backlog);
    if (t > 3 * k / 4) last += static_cast<double>(backlog);
  }
  out.backlog.second_quarter = second / static_cast<double>(k / 2 - k / 4);
  out.backlog.last_quarter = last / static_cast<double>(k - 3 * k / 4);
  out.backlog.stable =
      out.backlog.last_quarter <= 1.25 * out.backlog.second_quarter + 2 * std::sqrt(out.backlog.second_quarter) + 1;
  out.throughput = static_cast<double>(completed) / (static_cast<double>(nodes_) * static_cast<double>(k));
  return out;
}

}  // namespace switchyard::dynamic
