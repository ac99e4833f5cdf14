// The dynamic schemes in real mode (switchyard::dynamic): every scheme drains
// on stop with exact counts (each node receives every other node's every
// request once, the bytes checked by the test's own pattern); nothing is lost
// or duplicated far above what the pipeline can carry; what a producer or a
// consumer throws cancels the job and run() rethrows it; an idle pipeline
// costs next to no CPU; the application can feed a pipeline from its threads.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <switchyard/dynamic/real_pipeline.hpp>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::dynamic;
using namespace std::chrono_literals;
using primitives::VirtualNetwork;

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

constexpr std::size_t kPayload = 40;

std::uint64_t key_of(Rank origin, Rank destination, std::uint64_t sequence) {
  return sytest::mix(origin, destination, sequence, 0xd1);
}

// Per receiving node: what it got, written on that node's core only.
struct Received {
  std::vector<std::uint64_t> per_node;
  std::vector<std::string> errors;  // the first bad payload per node
  explicit Received(Rank n) : per_node(n, 0), errors(n) {}
  std::function<void(const Delivery&)> callback() {
    return [this](const Delivery& d) {
      ++per_node[d.node];
      if (sytest::first_mismatch(d.payload, key_of(d.origin, d.destination, d.sequence)) != std::string::npos ||
          d.payload.size() != kPayload) {
        if (errors[d.node].empty())
          errors[d.node] = "request " + std::to_string(d.sequence) + " of " + std::to_string(d.origin);
      }
    };
  }
};

RealPipelineOptions options_for(DynamicScheme scheme, VirtualNetwork network, double rate, Received& received) {
  RealPipelineOptions o;
  o.scheme = scheme;
  o.network = std::move(network);
  o.rate = rate;
  o.seed = 11;
  o.payload_bytes = kPayload;
  o.deliver = received.callback();
  o.generate = [](Rank origin, Rank destination, std::uint64_t sequence, std::span<std::byte> payload) {
    sytest::fill_pattern(payload.data(), payload.size(), key_of(origin, destination, sequence));
  };
  return o;
}

// Every node got every other node's every request, once, with the right bytes.
void expect_drained(const RealRunStats& s, const Received& received, Rank n) {
  const std::uint64_t total = s.total_generated();
  EXPECT_GT(total, 0u);
  EXPECT_EQ(s.delivered, total * (n - 1));
  for (Rank v = 0; v < n; ++v) {
    EXPECT_EQ(received.per_node[v], total - s.generated[v]) << "node " << v;
    EXPECT_EQ(received.errors[v], "") << "bad payload at node " << v;
  }
}

const char* name_of(DynamicScheme s) {
  switch (s) {
    case DynamicScheme::indirect_broadcast:
      return "indirect";
    case DynamicScheme::direct_broadcast:
      return "direct";
    case DynamicScheme::scatter:
      return "scatter";
  }
  return "?";
}

class Schemes : public testing::TestWithParam<DynamicScheme> {};

TEST_P(Schemes, DrainOnStopWithExactCounts) {
  for (const VirtualNetwork& network : {VirtualNetwork::hypercube(3), VirtualNetwork::torus({3, 4})}) {
    const Rank n = network.size();
    Received received(n);
    RealPipeline pipeline(options_for(GetParam(), network, 400, received));
    const RealRunStats s = pipeline.run_for(runtime(), 200ms);
    SCOPED_TRACE(network.name());
    expect_drained(s, received, n);
  }
}

// Far beyond what two cores carry: queues grow, nothing is dropped, and the
// stop still drains every request.
TEST_P(Schemes, NothingLostAboveTheStabilityLimit) {
  const VirtualNetwork network = VirtualNetwork::hypercube(3);
  Received received(network.size());
  const double rate = GetParam() == DynamicScheme::scatter ? 20'000 : 60'000;
  RealPipeline pipeline(options_for(GetParam(), network, rate, received));
  const RealRunStats s = pipeline.run_for(runtime(), 100ms);
  expect_drained(s, received, network.size());
  EXPECT_GT(s.total_generated(), 100u);
}

// Rings of one cache line: routers keep waiting for room, up to the very end
// (a router whose last event is a send completing must still see it is done).
TEST_P(Schemes, TinyRingsStillDrain) {
  const VirtualNetwork network = VirtualNetwork::torus({4, 4});
  Received received(network.size());
  RealPipelineOptions o =
      options_for(GetParam(), network, GetParam() == DynamicScheme::scatter ? 2000 : 8000, received);
  o.ring_capacity = 1;
  RealPipeline pipeline(std::move(o));
  expect_drained(pipeline.run_for(runtime(), 100ms), received, network.size());
}

// stop() from another thread ends a pipeline started without a duration: 50
// ms after the first delivery (a job may take a while to start on a busy machine).
TEST_P(Schemes, StopFromAnotherThreadDrains) {
  const VirtualNetwork network = VirtualNetwork::complete(5);
  Received received(network.size());
  RealPipelineOptions o = options_for(GetParam(), network, 1000, received);
  // Relaxed: a signal to the stopper only; the counts are read after run().
  std::atomic<bool> delivered{false};
  o.deliver = [&delivered, count = received.callback()](const Delivery& d) {
    delivered.store(true, std::memory_order_relaxed);
    count(d);
  };
  RealPipeline pipeline(std::move(o));
  std::thread stopper([&] {
    while (!delivered.load(std::memory_order_relaxed)) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);
    pipeline.stop();
  });
  const RealRunStats s = pipeline.run(runtime());
  stopper.join();
  expect_drained(s, received, network.size());
  EXPECT_GT(s.seconds, 0.04);
}

INSTANTIATE_TEST_SUITE_P(RealMode, Schemes,
                         testing::Values(DynamicScheme::indirect_broadcast, DynamicScheme::direct_broadcast,
                                         DynamicScheme::scatter),
                         [](const auto& info) { return std::string(name_of(info.param)); });

struct ProducerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST(RealMode, ProducerThatThrowsCancelsTheJob) {
  for (DynamicScheme scheme : {DynamicScheme::indirect_broadcast, DynamicScheme::direct_broadcast}) {
    Received received(8);
    RealPipelineOptions o = options_for(scheme, VirtualNetwork::hypercube(3), 2000, received);
    o.generate = [](Rank origin, Rank, std::uint64_t sequence, std::span<std::byte>) {
      if (origin == 5 && sequence == 20) throw ProducerFailure("producer 5 fails");
    };
    const auto start = std::chrono::steady_clock::now();
    RealPipeline pipeline(std::move(o));
    try {
      pipeline.run(runtime());  // never stopped: only the failure ends it
      ADD_FAILURE() << "run() returned";
    } catch (const ProducerFailure& e) {
      EXPECT_STREQ(e.what(), "producer 5 fails");
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  }
}

TEST(RealMode, ConsumerThatThrowsCancelsTheJob) {
  Received received(8);
  RealPipelineOptions o = options_for(DynamicScheme::scatter, VirtualNetwork::hypercube(3), 2000, received);
  o.deliver = [](const Delivery& d) {
    if (d.node == 2 && d.sequence == 3) throw ProducerFailure("consumer 2 fails");
  };
  RealPipeline pipeline(std::move(o));
  EXPECT_THROW(pipeline.run(runtime()), ProducerFailure);
}

// A pipeline whose producers have almost nothing to send (0.5 requests/s per
// node) sleeps: idling 500 ms longer costs the whole program (workers,
// watchdog, sampler) under 5 % of one core. The difference of two runs
// leaves out the job's start and end, which cost the same in both.
TEST(RealMode, IdlePipelineCostsNearlyNoCpu) {
  const auto cpu = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return std::chrono::seconds(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           std::chrono::microseconds(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  for (DynamicScheme scheme : {DynamicScheme::indirect_broadcast, DynamicScheme::direct_broadcast}) {
    std::chrono::microseconds used[2];
    for (int longer = 0; longer < 2; ++longer) {
      Received received(16);
      RealPipeline pipeline(options_for(scheme, VirtualNetwork::hypercube(4), 0.5, received));
      const auto before = cpu();
      pipeline.run_for(runtime(), longer ? 600ms : 100ms);
      used[longer] = cpu() - before;
    }
    EXPECT_LT((used[1] - used[0]) * 20, 500ms)
        << name_of(scheme) << ": " << used[0].count() << " us CPU in a 100 ms run, " << used[1].count()
        << " us in a 600 ms one";
  }
}

// The application feeds every node from two threads of its own while the
// pipeline runs; after stop() every fed request has reached every other node.
TEST(RealMode, FedFromApplicationThreads) {
  for (DynamicScheme scheme :
       {DynamicScheme::indirect_broadcast, DynamicScheme::direct_broadcast, DynamicScheme::scatter}) {
    const VirtualNetwork network = VirtualNetwork::torus({2, 3});
    const Rank n = network.size();
    Received received(n);
    RealPipelineOptions o = options_for(scheme, network, 0, received);
    o.generate = nullptr;
    // The fed bytes of request s of node v: the pattern of (v, destination, s), one block per other node.
    RealPipeline pipeline(std::move(o));
    std::vector<std::uint64_t> fed(n, 0);
    std::thread run([&] { pipeline.run(runtime()); });
    std::vector<std::thread> feeders;
    for (Rank half = 0; half < 2; ++half) {
      feeders.emplace_back([&, half] {
        for (int round = 0; round < 50; ++round) {
          for (Rank v = half; v < n; v += 2) {
            std::vector<std::byte> payload;
            for (Rank d = 0; d < n; ++d) {
              if (scheme != DynamicScheme::scatter && d > 0) break;
              if (scheme == DynamicScheme::scatter && d == v) continue;
              const auto block =
                  sytest::pattern(kPayload, key_of(v, scheme == DynamicScheme::scatter ? d : ~Rank{0}, fed[v]));
              payload.insert(payload.end(), block.begin(), block.end());
            }
            ASSERT_TRUE(pipeline.feed(v, payload));
            ++fed[v];
          }
          std::this_thread::sleep_for(200us);
        }
      });
    }
    for (auto& t : feeders) t.join();
    pipeline.stop();
    run.join();
    EXPECT_FALSE(
        pipeline.feed(0, std::vector<std::byte>(scheme == DynamicScheme::scatter ? kPayload * (n - 1) : kPayload)));
    std::uint64_t total = 0;
    for (auto f : fed) total += f;
    for (Rank v = 0; v < n; ++v) {
      EXPECT_EQ(received.per_node[v], total - fed[v]) << name_of(scheme) << " node " << v;
      EXPECT_EQ(received.errors[v], "") << name_of(scheme) << " node " << v;
    }
  }
}

// Resident memory of this process now, in bytes (0 if unreadable).
double resident_bytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

// A pipeline fed faster than it can serve once never drained: eight
// application threads feed a rate-0 pipeline on hypercube(3) with 24-byte
// requests as fast as they can, then stop() it. feed() blocks past
// feed_capacity, so memory stays bounded; the drain takes time proportional to
// what was accepted; every accepted request reaches every other node once.
// (Before back-pressure, 0.1 s of this grew to 1.7 GB and the direct-broadcast
// pipeline had not drained 300 s after stop().) SWITCHYARD_TEST_FEED_SECONDS
// sets how long the threads feed (default 0.3).
TEST_P(Schemes, OverfedPipelineAppliesBackPressureAndDrains) {
  const VirtualNetwork network = VirtualNetwork::hypercube(3);
  const Rank n = network.size();
  const char* env = std::getenv("SWITCHYARD_TEST_FEED_SECONDS");
  const auto feeding = std::chrono::duration<double>(env ? std::atof(env) : 0.3);
  constexpr std::size_t kBytes = 24;
  RealPipelineOptions o;
  o.scheme = GetParam();
  o.network = network;
  o.rate = 0;
  o.payload_bytes = kBytes;
  std::vector<std::uint64_t> received(n, 0);  // per node, written on its core only
  o.deliver = [&](const Delivery& d) { ++received[d.node]; };
  RealPipeline pipeline(std::move(o));
  const std::vector<std::byte> payload(GetParam() == DynamicScheme::scatter ? kBytes * (n - 1) : kBytes, std::byte{7});

  const double resident_before = resident_bytes();
  std::atomic<double> resident_peak{resident_before};
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling.load()) {
      resident_peak.store(std::max(resident_peak.load(), resident_bytes()));
      std::this_thread::sleep_for(5ms);
    }
  });
  RealRunStats stats;
  std::chrono::steady_clock::time_point returned;
  std::thread run([&] {
    stats = pipeline.run(runtime());
    returned = std::chrono::steady_clock::now();
  });
  std::atomic<std::uint64_t> accepted{0};
  std::vector<std::thread> feeders;
  const auto until = std::chrono::steady_clock::now() + feeding;
  for (Rank t = 0; t < 8; ++t) {
    feeders.emplace_back([&, t] {
      for (std::uint64_t i = 0; std::chrono::steady_clock::now() < until; ++i) {
        if (!pipeline.feed(static_cast<Rank>((t + i) % n), payload)) break;
        accepted.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& f : feeders) f.join();
  const auto stopped = std::chrono::steady_clock::now();
  pipeline.stop();
  run.join();
  sampling.store(false);
  sampler.join();
  const double drain_s = std::chrono::duration<double>(returned - stopped).count();
  const double grown_mb = (resident_peak.load() - resident_before) / 1e6;
  std::printf(
      "%s: fed %.2f s by 8 threads: accepted %llu, delivered %llu (= accepted x %u: %s), drain %.3f s, "
      "resident peak +%.1f MB\n",
      name_of(GetParam()), feeding.count(), static_cast<unsigned long long>(accepted.load()),
      static_cast<unsigned long long>(stats.delivered), n - 1,
      stats.delivered == accepted.load() * (n - 1) ? "yes" : "NO", drain_s, grown_mb);
  EXPECT_GT(accepted.load(), 0u);
  EXPECT_EQ(stats.total_generated(), accepted.load());
  EXPECT_EQ(stats.delivered, accepted.load() * (n - 1));
  std::uint64_t got = 0;
  for (Rank v = 0; v < n; ++v) got += received[v];
  EXPECT_EQ(got, stats.delivered);
  // What can be queued: feed_capacity per node, a window per node in flight.
  EXPECT_LT(drain_s, sytest::kSanitized ? 60.0 : 20.0) << "stop() did not drain in time";
  EXPECT_LT(grown_mb, 400.0) << "memory grew with the feed rate";
}

// Poisson producers far beyond what the machine carries: the producers are
// held back, the run ends on time and drains, and it is judged UNSTABLE.
TEST_P(Schemes, OverloadedRunIsUnstableAndEndsOnTime) {
  RealPipelineOptions o;
  o.scheme = GetParam();
  o.network = VirtualNetwork::hypercube(3);
  o.rate = 1e6;
  o.payload_bytes = 24;
  const auto start = std::chrono::steady_clock::now();
  const DynamicReport r = run_real(runtime(), o, 300ms);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.stable) << "an overloaded pipeline was judged stable";
  EXPECT_EQ(r.delivered, r.generated * 7);
  EXPECT_GT(r.generated, 0u);
  EXPECT_LT(seconds, sytest::kSanitized ? 60.0 : 20.0) << "the run did not end in time";
}

TEST(RealMode, BadArgumentsAreRefused) {
  RealPipelineOptions o;
  o.network = VirtualNetwork::complete(1);
  EXPECT_THROW(RealPipeline{o}, InvalidArgument);
  o.network = VirtualNetwork::complete(4);
  o.rate = -1;
  EXPECT_THROW(RealPipeline{o}, InvalidArgument);
  o.rate = 0;
  RealPipeline fed(o);
  EXPECT_THROW(fed.feed(4, std::vector<std::byte>(o.payload_bytes)), InvalidArgument);
  EXPECT_THROW(fed.feed(0, std::vector<std::byte>(o.payload_bytes + 1)), InvalidArgument);
  EXPECT_THROW(run_real(runtime(), o, 100ms), InvalidArgument);  // rate 0
  o.rate = 10;
  RealPipeline timed(o);
  EXPECT_THROW(timed.run_for(runtime(), 0s), InvalidArgument);
  o.feed_capacity = 0;
  EXPECT_THROW(RealPipeline{o}, InvalidArgument);
  o.feed_capacity = 1;
  o.window = 0;
  EXPECT_THROW(RealPipeline{o}, InvalidArgument);
}

}  // namespace
