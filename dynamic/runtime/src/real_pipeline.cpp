// RealPipeline: the job (a router and a producer per node), the producers,
// the backlog sampler, and the statistics of a run.

#include "switchyard/dynamic/real_pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "real_routers.hpp"
#include "switchyard/dynamic/poisson_arrivals.hpp"
#include "switchyard/primitives/spanning_trees.hpp"
#include "switchyard/schedulers/payload.hpp"
#include "switchyard/splitmix64.hpp"

namespace switchyard::dynamic {

using detail::Clock;
using detail::PacketHeader;
using detail::PacketKind;

namespace {

// A producer with nothing due looks at the stop flag (Poisson) or its feed
// (rate 0) on this grid: the producers of a core wake together, and rarely.
constexpr auto kStopPoll = std::chrono::milliseconds(20);
constexpr auto kFeedPoll = std::chrono::milliseconds(1);
constexpr auto kSamplePeriod = std::chrono::milliseconds(5);
// A producer held back by a full pipeline looks again on this grid.
constexpr auto kFullPoll = std::chrono::microseconds(200);
// A producer looks at the pipeline's fill every this many requests (the
// counters are other cores' cache lines), and lets its router have the core
// as often: the window may hold thousands of requests.
constexpr std::uint64_t kCheckEvery = 16;
// Where the Poisson processes begin, after run() is called: the job's start-up.
constexpr auto kStartDelay = std::chrono::milliseconds(5);

Clock::time_point next_on_grid(Clock::time_point now, Clock::duration step) {
  return Clock::time_point((now.time_since_epoch() / step + 1) * step);
}

// The payload pattern's seed for request `sequence` of a run seeded `seed`.
std::uint64_t request_seed(std::uint64_t seed, std::uint64_t sequence) {
  return splitmix64(seed ^ splitmix64(sequence));
}

struct FeedItem {
  Clock::time_point fed;
  std::vector<std::byte> payload;
};

// What the application feed()s one node: guarded by its mutex (feed() runs on
// the application's threads, the producer on the node's core). At most
// feed_capacity items: feed() waits on `room` past that.
struct Feed {
  std::mutex mutex;
  std::condition_variable room;  // notified by the producer as it takes an item, and by stop()
  std::deque<FeedItem> items;
  std::size_t waiting = 0;  // feed() calls blocked on `room`
  bool closed = false;  // set by stop(): nothing more is accepted
};

}  // namespace

class RealPipeline::Impl {
 public:
  explicit Impl(RealPipelineOptions options);
  RealRunStats run(Runtime& runtime, std::optional<std::chrono::duration<double>> stop_after);
  void stop() noexcept;
  bool feed(Rank node, std::span<const std::byte> payload);

 private:
  Rank nodes() const noexcept { return options_.network.size(); }
  std::size_t packet_bytes() const noexcept { return sizeof(PacketHeader) + options_.payload_bytes; }
  std::size_t request_bytes() const noexcept {
    return options_.scheme == DynamicScheme::scatter ? packet_bytes() * nodes() : packet_bytes();
  }
  Task<void> body(Process& p);
  Task<void> produce(Process& p, Rank node, Clock::time_point start);
  void poisson_request(Rank node, std::uint64_t sequence, Clock::time_point at, std::span<std::byte> request);
  // 1: a fed request is in `request`; 0: none yet; -1: none, and none will come.
  int fed_request(Rank node, std::uint64_t sequence, std::span<std::byte> request);
  void write_packet(std::span<std::byte> packet, Rank origin, Rank destination, std::uint64_t sequence,
                    Clock::time_point at) const;
  std::function<void(const Delivery&)> checked_delivery() const;
  void sample_backlog(std::stop_token stop);
  // Deliveries owed: requests generated but not yet received everywhere, x their receivers.
  double owed() const noexcept;
  // Whether the pipeline owes its window's worth: producers then wait.
  bool full() const noexcept { return owed() >= window_deliveries_; }
  RealRunStats statistics() const;

  RealPipelineOptions options_;
  std::uint32_t trees_ = 0;
  double window_deliveries_ = 0;  // N (N - 1) x options_.window
  std::vector<std::vector<detail::TreeLink>> links_;  // direct broadcasting: each node's tree links
  std::unique_ptr<detail::NodeCounters[]> counters_;
  std::vector<std::unique_ptr<detail::Ledger>> ledgers_;
  std::unique_ptr<Feed[]> feeds_;
  // run_for: how long after the start the Poisson producers stop (none: at stop()).
  std::optional<Clock::duration> stop_after_;
  // The Poisson processes' origin, ns since the clock's epoch, 0 until the job
  // has started: set by rank 0 once every process runs, sent to the others by
  // a broadcast; read by the sampler and stop() (acquire: pairs with the
  // release store, though only the value itself is handed over).
  std::atomic<Clock::rep> start_ns_{0};
  Clock::time_point start() const noexcept {
    return Clock::time_point(Clock::duration(start_ns_.load(std::memory_order_acquire)));
  }
  Clock::time_point stop_at(Clock::time_point start) const noexcept {
    return stop_after_ ? start + *stop_after_ : Clock::time_point::max();
  }
  // Set by stop() (any thread), read by the producers (acquire: pairs with
  // its release; nothing else is handed over, it only ends generation).
  std::atomic<bool> stopped_{false};
  // When stop() was first called (ns since the clock's epoch); -1 before
  // (relaxed: read after the job, which orders it).
  std::atomic<std::int64_t> stopped_at_ns_{-1};
  std::vector<std::pair<double, double>> backlog_;  // written by the sampler thread, read after it joined
  bool ran_ = false;
};

RealPipeline::Impl::Impl(RealPipelineOptions options) : options_(std::move(options)) {
  const Rank n = nodes();
  if (n < 2) throw InvalidArgument("switchyard dynamic: a pipeline needs at least 2 nodes, not " + std::to_string(n));
  if (options_.rate < 0 || !std::isfinite(options_.rate)) {
    throw InvalidArgument("switchyard dynamic: rate must be finite and >= 0 requests/s, not " +
                          number_text(options_.rate));
  }
  if (options_.feed_capacity == 0 || options_.window == 0) {
    throw InvalidArgument("switchyard dynamic: feed_capacity and window must be at least 1 request, not " +
                          std::to_string(options_.feed_capacity) + " and " + std::to_string(options_.window));
  }
  window_deliveries_ = static_cast<double>(n) * (n - 1) * static_cast<double>(options_.window);
  if (request_bytes() > (std::size_t{1} << 20)) {
    throw InvalidArgument("switchyard dynamic: a request of " + std::to_string(options_.payload_bytes) +
                          "-byte payloads is over 1 MiB with its headers (" + std::to_string(request_bytes()) +
                          " bytes); a request must fit a mailbox's eager copy");
  }
  const primitives::EdgeDisjointTrees trees = primitives::edge_disjoint_spanning_trees(options_.network);
  trees_ = static_cast<std::uint32_t>(trees.count());
  links_.resize(n);
  for (std::uint32_t j = 0; j < trees_; ++j) {
    for (const auto& [a, b] : trees.trees[j]) {
      links_[a].push_back({static_cast<Rank>(b), j});
      links_[b].push_back({static_cast<Rank>(a), j});
    }
  }
  counters_ = std::make_unique<detail::NodeCounters[]>(n);
  feeds_ = std::make_unique<Feed[]>(n);
}

void RealPipeline::Impl::stop() noexcept {
  std::int64_t never = -1;
  stopped_at_ns_.compare_exchange_strong(never, Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  for (Rank v = 0; v < nodes(); ++v) {
    {
      std::lock_guard lock(feeds_[v].mutex);
      feeds_[v].closed = true;
    }
    feeds_[v].room.notify_all();  // blocked feed() calls return false
  }
  stopped_.store(true, std::memory_order_release);
}

bool RealPipeline::Impl::feed(Rank node, std::span<const std::byte> payload) {
  if (node >= nodes()) {
    throw InvalidArgument("switchyard dynamic: feed: node " + std::to_string(node) + " out of range (" +
                          std::to_string(nodes()) + " nodes)");
  }
  const std::size_t want =
      options_.scheme == DynamicScheme::scatter ? options_.payload_bytes * (nodes() - 1) : options_.payload_bytes;
  if (payload.size() != want) {
    throw InvalidArgument("switchyard dynamic: feed: a request of this pipeline is " + std::to_string(want) +
                          " bytes, not " + std::to_string(payload.size()));
  }
  if (options_.rate > 0) throw InvalidArgument("switchyard dynamic: feed: this pipeline's producers are Poisson");
  Feed& f = feeds_[node];
  std::unique_lock lock(f.mutex);
  if (!f.closed && f.items.size() >= options_.feed_capacity) {
    ++f.waiting;
    f.room.wait(lock, [&] { return f.closed || f.items.size() < options_.feed_capacity; });
    --f.waiting;
  }
  if (f.closed) return false;
  f.items.push_back({Clock::now(), {payload.begin(), payload.end()}});
  return true;
}

void RealPipeline::Impl::write_packet(std::span<std::byte> packet, Rank origin, Rank destination,
                                      std::uint64_t sequence, Clock::time_point at) const {
  PacketHeader h;
  h.origin = origin;
  h.destination = destination;
  h.sequence = sequence;
  h.generated_ns = at.time_since_epoch().count();
  // Direct broadcasting: the packet's tree, chosen now, uniformly and independently of the others.
  h.tree = static_cast<std::uint32_t>(
      splitmix64(options_.seed ^ splitmix64(origin * 0x9e3779b97f4a7c15ull + sequence)) % trees_);
  std::memcpy(packet.data(), &h, sizeof h);
}

void RealPipeline::Impl::poisson_request(Rank node, std::uint64_t sequence, Clock::time_point at,
                                         std::span<std::byte> request) {
  const std::size_t packet = packet_bytes();
  const std::uint64_t seed = request_seed(options_.seed, sequence);
  const auto fill = [&](std::span<std::byte> slot, Rank destination) {
    write_packet(slot, node, destination, sequence, at);
    std::span<std::byte> payload = slot.subspan(sizeof(PacketHeader));
    if (options_.generate) {
      options_.generate(node, destination, sequence, payload);
    } else {
      schedulers::fill_payload(payload, seed, node, destination);
    }
  };
  if (options_.scheme != DynamicScheme::scatter) {
    fill(request, detail::kEveryone);
  } else {
    for (Rank d = 0; d < nodes(); ++d) {
      if (d != node) fill(request.subspan(d * packet, packet), d);
    }
  }
}

int RealPipeline::Impl::fed_request(Rank node, std::uint64_t sequence, std::span<std::byte> request) {
  FeedItem item;
  Feed& f = feeds_[node];
  bool someone_waits = false;
  {
    std::lock_guard lock(f.mutex);
    if (f.items.empty()) return f.closed ? -1 : 0;
    item = std::move(f.items.front());
    f.items.pop_front();
    someone_waits = f.waiting > 0;
  }
  if (someone_waits) f.room.notify_one();  // no system call unless a feeder is blocked
  const std::size_t packet = packet_bytes(), payload = options_.payload_bytes;
  if (options_.scheme != DynamicScheme::scatter) {
    write_packet(request, node, detail::kEveryone, sequence, item.fed);
    std::copy(item.payload.begin(), item.payload.end(), request.begin() + sizeof(PacketHeader));
    return 1;
  }
  std::size_t block = 0;  // the fed blocks are for the other nodes, in order
  for (Rank d = 0; d < nodes(); ++d) {
    std::span<std::byte> slot = request.subspan(d * packet, packet);
    write_packet(slot, node, d, sequence, item.fed);
    if (d == node) continue;
    std::copy_n(item.payload.begin() + block++ * payload, payload, slot.begin() + sizeof(PacketHeader));
  }
  return 1;
}

// Sleeps between requests; every request goes to the node's router as one
// message, the done notice last (the router's end of drain).
Task<void> RealPipeline::Impl::produce(Process& p, Rank node, Clock::time_point start) {
  std::vector<std::byte> request(request_bytes());
  std::optional<PoissonArrivals> arrivals;
  Clock::time_point due;
  const Clock::time_point stop_at = this->stop_at(start);
  const auto next_due = [&] {
    return start + std::chrono::ceil<Clock::duration>(std::chrono::duration<double>(arrivals->next()));
  };
  // Single writer; see NodeCounters.
  const auto publish_due = [&](std::int64_t ns) { counters_[node].due_ns.store(ns, std::memory_order_relaxed); };
  if (options_.rate > 0) {
    arrivals.emplace(options_.rate, options_.seed, node);
    due = next_due();
    publish_due(due.time_since_epoch().count());
  }
  std::uint64_t sequence = 0;
  for (;;) {
    const bool stopping = stopped_.load(std::memory_order_acquire);
    if (arrivals) {
      if (stopping || Clock::now() >= stop_at) break;
      if (Clock::now() < due || due >= stop_at) {  // the latter: nothing more before the stop
        // Named first: GCC 12 miscompiles a braced list inside a co_await expression.
        const Clock::time_point wake = std::min(std::min(due, stop_at), next_on_grid(Clock::now(), kStopPoll));
        co_await p.sleep_until(wake);
        continue;
      }
    }
    if (sequence % kCheckEvery == 0) {
      if (full()) {  // back-pressure: held back until the pipeline has delivered some
        co_await p.sleep_until(next_on_grid(Clock::now(), kFullPoll));
        continue;
      }
      if (sequence > 0) co_await p.yield();  // the router shares this core
    }
    if (arrivals) {
      poisson_request(node, sequence, due, request);
      due = next_due();
      publish_due(due.time_since_epoch().count());
    } else {
      const int got = fed_request(node, sequence, request);
      if (got < 0) break;
      if (got == 0) {
        co_await p.sleep_until(next_on_grid(Clock::now(), kFeedPoll));
        continue;
      }
    }
    co_await p.send(node, request, detail::kRequestTag);
    ++sequence;
    // Single writer; see NodeCounters.
    counters_[node].generated.store(sequence, std::memory_order_relaxed);
  }
  publish_due(0);
  PacketHeader done;
  done.origin = node;
  done.sequence = sequence;
  done.kind = PacketKind::kDone;
  std::memcpy(request.data(), &done, sizeof done);
  co_await p.send(node, std::span(request).first(sizeof done), detail::kRequestTag);
}

Task<void> RealPipeline::Impl::body(Process& p) {
  const Rank n = nodes();
  const bool router = p.rank() < n;
  Communicator routers = co_await p.world().split(router ? 0 : 1, p.rank());
  // The origin of the arrivals, once every process runs (a job may take a
  // while to start on a busy machine): rank 0's clock, sent to all.
  const Clock::rep proposed = (Clock::now() + kStartDelay).time_since_epoch().count();
  const std::vector<std::byte> sent = co_await p.world().broadcast(0, std::as_bytes(std::span(&proposed, 1)));
  Clock::rep start_ns;
  std::memcpy(&start_ns, sent.data(), sizeof start_ns);
  if (p.rank() == 0) start_ns_.store(start_ns, std::memory_order_release);
  if (!router) {
    co_await produce(p, p.rank() - n, Clock::time_point(Clock::duration(start_ns)));
    co_return;
  }
  const Rank v = p.rank();
  detail::Ledger& ledger = *ledgers_[v];
  if (options_.scheme == DynamicScheme::direct_broadcast) {
    co_await detail::direct_router(p, routers, n + v, links_[v], ledger, packet_bytes());
    co_return;
  }
  std::unique_ptr<RealStaticAlgorithm> algorithm =
      options_.scheme == DynamicScheme::scatter ? real_pmns_scatter() : real_pmnb_broadcast();
  co_await detail::wrapper_router(p, routers, n + v, *algorithm, ledger, packet_bytes());
}

std::function<void(const Delivery&)> RealPipeline::Impl::checked_delivery() const {
  if (options_.rate == 0 || options_.generate) return options_.deliver;  // the application's own bytes
  return [this, deliver = options_.deliver](const Delivery& d) {
    if (auto wrong =
            schedulers::first_wrong_byte(d.payload, request_seed(options_.seed, d.sequence), d.origin, d.destination)) {
      throw Error("switchyard dynamic: byte " + std::to_string(*wrong) + " of request " + std::to_string(d.sequence) +
                  " of node " + std::to_string(d.origin) + " is wrong at node " + std::to_string(d.node));
    }
    if (deliver) deliver(d);
  };
}

void RealPipeline::Impl::sample_backlog(std::stop_token stop) {
  const Rank n = nodes();
  while (!stop.stop_requested() && start_ns_.load(std::memory_order_acquire) == 0) {
    std::this_thread::sleep_for(kSamplePeriod);  // the job is starting
  }
  const Clock::time_point start = this->start();
  while (!stop.stop_requested() && !stopped_.load(std::memory_order_acquire)) {
    double owed = this->owed();
    const auto now = Clock::now();
    if (now >= stop_at(start)) break;
    // Arrivals due but held back by a full pipeline are owed too: λ per second since the one due.
    for (Rank v = 0; v < n; ++v) {
      const std::int64_t due = counters_[v].due_ns.load(std::memory_order_relaxed);
      const double late =
          due ? std::chrono::duration<double>(now.time_since_epoch() - Clock::duration(due)).count() : 0;
      if (late > 0) owed += late * options_.rate * (n - 1);
    }
    backlog_.emplace_back(std::chrono::duration<double>(now - start).count(), owed);
    std::this_thread::sleep_for(kSamplePeriod);
  }
}

double RealPipeline::Impl::owed() const noexcept {
  std::uint64_t generated = 0, delivered = 0;
  for (Rank v = 0; v < nodes(); ++v) {
    delivered += counters_[v].delivered.load(std::memory_order_relaxed);
    generated += counters_[v].generated.load(std::memory_order_relaxed);
  }
  return std::max(0.0, static_cast<double>(generated) * (nodes() - 1) - static_cast<double>(delivered));
}

RealRunStats RealPipeline::Impl::run(Runtime& runtime, std::optional<std::chrono::duration<double>> stop_after) {
  if (ran_) throw InvalidArgument("switchyard dynamic: a RealPipeline runs once");
  ran_ = true;
  const Rank n = nodes();
  for (Rank v = 0; v < n; ++v) {
    ledgers_.push_back(std::make_unique<detail::Ledger>(v, n, counters_[v], checked_delivery()));
  }
  std::vector<int> cores(2 * static_cast<std::size_t>(n));
  for (Rank v = 0; v < n; ++v) cores[v] = cores[n + v] = runtime.cores()[v % runtime.cores().size()];
  RunOptions options;
  options.placement = Placement::explicit_map(std::move(cores));
  // A request is copied into its router's mailbox (eager): a producer never
  // waits for its router, which takes requests in only between periods.
  options.eager_limit = std::max<std::uint64_t>(options.eager_limit, request_bytes());
  options.ring_capacity = options_.ring_capacity;
  // Every message of the pipeline is taken before its job ends: one left over
  // is a defect of the pipeline, and fails the job rather than a line on stderr.
  options.strict = true;
  if (stop_after) stop_after_ = std::chrono::ceil<Clock::duration>(*stop_after);
  {
    std::jthread sampler([this](std::stop_token stop) { sample_backlog(stop); });
    runtime.run(
        2 * static_cast<std::uint64_t>(n), [this](Process& p) { return body(p); }, options);
  }
  return statistics();
}

RealRunStats RealPipeline::Impl::statistics() const {
  const Rank n = nodes();
  RealRunStats s;
  double reception_ns = 0;
  for (Rank v = 0; v < n; ++v) {
    s.generated.push_back(counters_[v].generated.load(std::memory_order_relaxed));
    s.delivered += counters_[v].delivered.load(std::memory_order_relaxed);
    reception_ns += ledgers_[v]->delay_sum_ns();
  }
  // The routers end only once drained; a shortfall here is a bug, not a measurement.
  for (Rank r = 0; r < n; ++r) {
    for (Rank o = 0; o < n; ++o) {
      if (o != r && ledgers_[r]->received_from(o) != s.generated[o]) {
        throw Error("switchyard dynamic: node " + std::to_string(r) + " received " +
                    std::to_string(ledgers_[r]->received_from(o)) + " of the " + std::to_string(s.generated[o]) +
                    " requests of node " + std::to_string(o));
      }
    }
  }
  const std::int64_t stopped_ns = stopped_at_ns_.load(std::memory_order_relaxed);
  const Clock::time_point stopped = stop_after_ ? stop_at(start()) : Clock::time_point(Clock::duration(stopped_ns));
  s.seconds = std::max(0.0, std::chrono::duration<double>(stopped - start()).count());
  s.mean_reception_delay_us = s.delivered ? reception_ns / static_cast<double>(s.delivered) * 1e-3 : 0;
  double completion_ns = 0;
  std::uint64_t sampled = 0;
  for (Rank o = 0; o < n; ++o) {
    for (std::uint64_t q = 0; q < s.generated[o]; q += detail::Ledger::kSampleEvery) {
      std::int64_t last = 0;
      for (Rank r = 0; r < n; ++r) {
        if (r != o) last = std::max(last, ledgers_[r]->sampled_delay(o, q));
      }
      completion_ns += static_cast<double>(last);
      ++sampled;
    }
  }
  s.mean_completion_delay_us = sampled ? completion_ns / static_cast<double>(sampled) * 1e-3 : 0;
  s.backlog = backlog_;
  return s;
}

std::uint64_t RealRunStats::total_generated() const noexcept {
  std::uint64_t total = 0;
  for (std::uint64_t g : generated) total += g;
  return total;
}

RealPipeline::RealPipeline(RealPipelineOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
RealPipeline::~RealPipeline() = default;
RealRunStats RealPipeline::run(Runtime& runtime) { return impl_->run(runtime, std::nullopt); }
RealRunStats RealPipeline::run_for(Runtime& runtime, std::chrono::duration<double> duration) {
  if (!(duration.count() > 0)) throw InvalidArgument("switchyard dynamic: run_for needs a positive duration");
  return impl_->run(runtime, duration);
}
void RealPipeline::stop() noexcept { impl_->stop(); }
bool RealPipeline::feed(Rank node, std::span<const std::byte> payload) { return impl_->feed(node, payload); }

}  // namespace switchyard::dynamic

namespace switchyard::dynamic {

namespace {

// Stable unless the backlog grew over the second half of the run by more than
// 5 % of what the producers asked for meanwhile (N (N - 1) λ packets a
// second): the least-squares slope of the samples, against that demand.
bool backlog_bounded(const RealRunStats& s, Rank n, double rate) {
  std::vector<std::pair<double, double>> half;
  for (const auto& point : s.backlog) {
    if (point.first >= s.seconds / 2) half.push_back(point);
  }
  if (half.size() < 4) return true;
  double mt = 0, mb = 0;
  for (const auto& [t, b] : half) {
    mt += t;
    mb += b;
  }
  mt /= static_cast<double>(half.size());
  mb /= static_cast<double>(half.size());
  double cov = 0, var = 0;
  for (const auto& [t, b] : half) {
    cov += (t - mt) * (b - mb);
    var += (t - mt) * (t - mt);
  }
  const double slope = var > 0 ? cov / var : 0;
  return slope <= 0.05 * rate * n * (n - 1);
}

}  // namespace

DynamicReport run_real(Runtime& runtime, RealPipelineOptions options, std::chrono::duration<double> duration) {
  if (!(options.rate > 0)) throw InvalidArgument("switchyard dynamic: run_real needs a positive rate (requests/s)");
  DynamicReport report;
  report.scheme = options.scheme;
  report.topology = options.network.name();
  report.processes = options.network.size();
  report.k = static_cast<std::size_t>(primitives::edge_disjoint_spanning_trees(options.network).count());
  report.time_unit = "us";
  report.rate = options.rate;
  const Rank n = options.network.size();
  RealPipeline pipeline(std::move(options));
  const RealRunStats s = pipeline.run_for(runtime, duration);
  report.stable = backlog_bounded(s, n, report.rate);
  report.broadcast_delay = s.mean_completion_delay_us;
  report.reception_delay = s.mean_reception_delay_us;
  report.generated = s.total_generated();
  report.delivered = s.delivered;
  return report;
}

}  // namespace switchyard::dynamic
