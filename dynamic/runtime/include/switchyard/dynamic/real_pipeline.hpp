#pragma once
// The dynamic schemes in real mode (Varvarigos sections 2.2, 3.4, 3.5): the
// pipelines run free on the runtime's mailboxes, with λ in requests per
// second, until they are stopped, while the application keeps running.
//
// A pipeline of N nodes is one job of 2N processes: node v's router (rank v;
// the N routers have a communicator of their own) and its producer (rank
// N + v, on the same core). The producer generates requests, a Poisson process
// of rate λ per second (PoissonArrivals, seeded per node, sleeping with
// sleep_until between requests) or, with rate 0, whatever the application
// feed()s from its own threads; it hands each request to its router. The
// routers run the scheme and hand every packet that reaches a node to the
// application's `deliver` callback, on that node's core.
//
// stop() (any thread) ends generation; run() returns once the pipeline has
// drained: every packet generated before the stop has reached every node it
// must, and RealRunStats proves it (received = generated x (N - 1), no packet
// twice; a loss or a duplicate is an error that fails the run).
//
// Back-pressure: a pipeline fed faster than it can serve never grows without
// bound. feed() queues at most `feed_capacity` requests per node and blocks
// the calling thread while that node's queue is full (until its producer takes
// one, or stop()). A producer generates a request only while the pipeline owes
// fewer than N (N - 1) x `window` deliveries (its requests generated but not
// yet received everywhere); past that it waits. So memory stays bounded
// under any feed rate or λ, stop() drains in time proportional to what was
// accepted, and an overloaded Poisson run shows as a growing backlog (the
// requests due but held back count in it): UNSTABLE, not hung.
//
//   RealPipeline bus(options);                     // rate 0: fed by the application
//   std::thread t([&] { bus.run(runtime); });
//   bus.feed(3, bytes);                            // from any thread
//   ...; bus.stop(); t.join();

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "switchyard/dynamic/dynamic_report.hpp"
#include "switchyard/primitives/virtual_network.hpp"
#include "switchyard/runtime.hpp"

namespace switchyard::dynamic {

/// One packet reaching one node.
struct Delivery {
  Rank node = 0;  ///< the receiver
  Rank origin = 0;  ///< the node whose request it is
  std::uint64_t sequence = 0;  ///< the request's number at its origin: 0, 1, 2, ...
  Rank destination = 0;  ///< == node for scattering; kEveryone (~0) for a broadcast
  std::chrono::steady_clock::time_point generated;  ///< when its origin generated the request
  std::span<const std::byte> payload;  ///< valid during the callback only
};

/// A real-mode pipeline: the scheme, its network, the arrivals or feed, payloads and bounds on what it holds.
struct RealPipelineOptions {
  DynamicScheme scheme = DynamicScheme::indirect_broadcast;  ///< the scheme the routers run
  /// The nodes and their links: N = network.size(). Direct broadcasting forwards
  /// on its edge-disjoint spanning trees; the wrapper schemes run the runtime's
  /// PMNB / PMNS calls among the N routers.
  primitives::VirtualNetwork network = primitives::VirtualNetwork::complete(2);
  /// λ, requests per node per second (Poisson producers); 0: the nodes send
  /// what feed() gives them.
  double rate = 0;
  std::uint64_t seed = 1;  ///< the arrivals', the direct scheme's tree choices' and the payload pattern's
  /// Bytes of every packet's payload (a scatter request carries N - 1 of them).
  /// Poisson producers fill them with the schedulers' payload pattern, checked
  /// byte for byte on delivery.
  std::size_t payload_bytes = 64;
  /// RunOptions::ring_capacity of the pipeline's job: cache lines per
  /// core-to-core ring (small rings make the routers wait for room).
  std::size_t ring_capacity = 1024;
  /// Requests per node that feed() holds before it blocks (>= 1).
  std::size_t feed_capacity = 1024;
  /// Undelivered requests per node, on average, beyond which producers wait
  /// (>= 1): see the back-pressure note above.
  std::size_t window = 256;
  /// Called on the receiving node's core for every packet; must not block.
  std::function<void(const Delivery&)> deliver;
  /// Poisson producers: if set, fills each request's payload (for scattering,
  /// the packet for `destination`) instead of the pattern, on the producer's
  /// core; then nothing checks the bytes but the application. What it throws
  /// cancels the job, and run() rethrows it.
  std::function<void(Rank origin, Rank destination, std::uint64_t sequence, std::span<std::byte> payload)> generate;
};

/// What a real-mode run counted and measured, in microseconds and seconds.
struct RealRunStats {
  std::vector<std::uint64_t> generated;  ///< requests per origin
  std::uint64_t delivered = 0;  ///< packets received, all nodes: generated x (N - 1) once drained
  double seconds = 0;  ///< from the start to the stop
  double mean_reception_delay_us = 0;  ///< 𝓡: generation to reception, over every reception
  double mean_completion_delay_us = 0;  ///< 𝓑: generation to the last reception, over every request
  /// Packets generated but not yet received everywhere, sampled over the run
  /// (seconds since the start, packets): the stability verdict reads its growth.
  std::vector<std::pair<double, double>> backlog;
  std::uint64_t total_generated() const noexcept;  ///< the sum of generated
};

/// A dynamic scheme running free on the runtime's mailboxes (see the file's description).
class RealPipeline {
 public:
  /// Checks the options: InvalidArgument for fewer than 2 nodes, a negative or infinite
  /// rate, a zero feed_capacity or window, or a request over 1 MiB with its headers.
  explicit RealPipeline(RealPipelineOptions options);
  ~RealPipeline();  ///< only once run() has returned (or was never called)
  RealPipeline(const RealPipeline&) = delete;
  RealPipeline& operator=(const RealPipeline&) = delete;

  /// Runs the pipeline as a job on `runtime` until stop(), then drains, and
  /// returns the counts and delays. Blocks the calling thread; rethrows what a
  /// process threw (a producer's or a callback's exception cancels the job).
  /// One run per RealPipeline.
  RealRunStats run(Runtime& runtime);
  /// run() with Poisson producers that stop by themselves `duration` after the
  /// start (their first possible arrival): no request is due at or after it.
  RealRunStats run_for(Runtime& runtime, std::chrono::duration<double> duration);
  /// Ends generation; run() returns once what was generated is delivered. Any thread.
  void stop() noexcept;
  /// Rate-0 pipelines: queues one request of `payload` (payload_bytes bytes;
  /// for scattering, (N - 1) x payload_bytes, block d for the d-th other node)
  /// at `node`. Any thread; blocks while `node` already holds feed_capacity
  /// requests; requests fed after stop() are refused (false), and a feed()
  /// blocked when stop() is called returns false.
  bool feed(Rank node, std::span<const std::byte> payload);

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Runs one scheme with Poisson producers for `duration`, then stops and
/// drains, and reports in microseconds: rate in requests per second, delays in
/// µs, generated/delivered counts, and `stable` from the backlog's growth over
/// the second half of the run. The theorem's fields (stability_limit, bounds)
/// are left 0: they are in slots, see dynamic_core.
DynamicReport run_real(Runtime& runtime, RealPipelineOptions options, std::chrono::duration<double> duration);

}  // namespace switchyard::dynamic
