#pragma once
// One run of a dynamic scheme in slot time: what is asked (per-node Poisson
// arrivals of rate λ per slot for K slots, then a stop that drains) and what
// is measured (counts, delays with their sampling error, the backlog and the
// stability verdict drawn from it).
#include <cstdint>

namespace switchyard::dynamic {

/// A slot-mode run: the arrival rate, how long requests arrive, and how the delays are averaged.
struct SlotRunOptions {
  double rate = 0.01;  ///< λ: requests per node per slot
  std::int64_t slots = 20000;  ///< K: requests are generated in [0, K); then the run drains
  std::uint64_t seed = 1;  ///< the arrivals' (and the direct scheme's tree choices')
  /// Delays are averaged over the requests generated in [warmup × K, K): the
  /// first ones meet an empty network, which the steady-state theorems do not assume.
  double warmup = 0.1;
  int batches = 20;  ///< batch means: the window cut into this many batches by generation time
};

/// A mean with the half-width of its 95 % confidence interval, by batch means:
/// the window's requests are cut into `batches` consecutive batches by
/// generation time, and the spread of the batch means (Student t, batches - 1
/// degrees of freedom) gives the half-width. Batches of thousands of slots are
/// far longer than a delay, so their means are nearly independent even though
/// neighbouring requests' delays are not. Half-width 0 with fewer than two
/// non-empty batches (stated as unknown by the callers).
struct DelayEstimate {
  double mean = 0;  ///< over the window's requests
  double half_width = 0;  ///< of the 95 % confidence interval; 0 when unknown
  std::int64_t samples = 0;  ///< requests (or deliveries) averaged
};

/// The stability verdict from queue growth. The backlog Q(t) (requests
/// generated and not yet delivered everywhere) is averaged over the second
/// quarter of the run and over the last one. A stable scheme's backlog is
/// stationary once the warm-up is over, so the two averages estimate one mean;
/// an unstable one's grows linearly, so the last quarter's average is about
/// (7/8) / (3/8) = 2.3 times the second's. The verdict is "unstable" when the
/// last quarter's average Q4 exceeds the second's Q2 by more than a quarter and
/// by more than the Poisson-scale noise of a small backlog:
/// Q4 > 1.25 Q2 + 2 sqrt(Q2) + 1. (A floor of one request per node hid a
/// growth from 66 to 123 requests at N = 256, where a scatter load of
/// 1.1 x the limit generates only 1500 requests in 10^5 slots.)
/// Loads within a few per cent of the limit relax more slowly than a quarter
/// of a run of tens of thousands of slots: there the verdict is unreliable.
struct BacklogGrowth {
  double second_quarter = 0;  ///< mean backlog, requests
  double last_quarter = 0;  ///< mean backlog over the last quarter, requests
  bool stable = true;  ///< the verdict: false when the backlog grew
};

/// What a slot-mode run measured, every delivery checked (DeliveryLedger).
struct SlotRunResult {
  std::int64_t generated = 0;  ///< requests generated in [0, K)
  std::int64_t delivered = 0;  ///< packets delivered, each to one node: generated × (N - 1) once drained
  std::int64_t slots_run = 0;  ///< K plus the drain
  DelayEstimate broadcast_delay;  ///< 𝓑: generation to the last delivery (a scatter: to its completion)
  DelayEstimate reception_delay;  ///< 𝓡: generation to each delivery, averaged over the deliveries
  double throughput = 0;  ///< requests completed in [0, K) per node per slot
  BacklogGrowth backlog;  ///< the stability verdict from queue growth
  std::int64_t periods = 0;  ///< static-to-dynamic schemes: static tasks run
  std::int64_t periods_over_bound = 0;  ///< ... of which took more than X M + V (0 when the static theorem holds)
  std::int64_t largest_period_requests = 0;  ///< ... the largest M
};

}  // namespace switchyard::dynamic
