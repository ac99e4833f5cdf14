#include "switchyard/model/calibration/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "switchyard/cache_line.hpp"
#include "switchyard/model/calibration/host_state.hpp"
#include "switchyard/model/colocation.hpp"
#include "switchyard/model/estimators.hpp"
#include "switchyard/model/slow_rounds.hpp"
#include "switchyard/runtime.hpp"
#include "switchyard/schedulers/auto_scheduler.hpp"
#include "switchyard/schedulers/exchange.hpp"

namespace switchyard::model::calibration {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kLargeBytes = 16 * 1024;
constexpr std::uint32_t kLargeCount = 8;
constexpr std::uint64_t kSmallBytes = 64;
constexpr std::uint32_t kSmallCount = 1024;
constexpr Tag kHandshakeTag = 1;
constexpr Rank kCorrectionProcesses = 16;
constexpr std::uint64_t kCorrectionSeed = 1001;
constexpr std::uint64_t kCorrectionBytes[] = {128, 1024, 16384};
// The exchange corrections' scales: Fig. 7 matrices of so many processes
// sending so many messages each (ExchangeCorrection::messages_per_core).
struct CorrectionScale {
  Rank processes, density;
};
constexpr CorrectionScale kCorrectionScales[] = {{kCorrectionProcesses, 4}, {64, 16}};
constexpr std::uint32_t kRoundTrips = 200;
// Runs of each hand-off in a probe of the co-located state around the exchange
// corrections: 15 x 200 round trips, a few milliseconds cross-core
// (docs/cost-model.md, "Calibration's probes").
constexpr std::uint32_t kColocationProbeRuns = 15;
// Matching: kMatchOutOfCacheEntries 8-byte messages with distinct tags,
// received in the order sent and in reverse (tags from kFirstStreamTag on;
// below it the handshake's). About as many receives as a flood posts on a core
// (1-lev-dir at p = 100: 4950), so that the walk misses the cache as a flood's
// does, its entries left cold by the other processes the core served in
// between: 2.1-2.6 units per receive passed, where with 256 alone 1-lev-dir was
// under-charged 2.6x at p = 100, L = 400 B. And kMatchInCacheEntries, whose
// list stays in L1, as a gather's root's does: 1.04 units.
constexpr Tag kFirstStreamTag = 2;
// Lockstep: this many processes (round robin on the cores) each send an
// 8-byte message to the next in kLockstepSteps supersteps of a ring shift.
constexpr Rank kLockstepProcesses = 64;
constexpr std::uint32_t kLockstepSteps = 32;
// Packing: a lockstep message of kGatherWords 8-byte pieces, written in order
// or gathered one piece per cache line (a stride of kGatherStrideWords) with
// a copy each, as the collectives pack blocks of their buffers
// (Transfer::packed), in kGatherSteps supersteps (16 MiB of sources in all,
// 8 MiB a core: past the private cache, as a collective's buffers are at
// p = 300). The pieces are read down the columns of a grid kGatherRun lines
// wide (gathered_line), as 2-lev-r,c reads R blocks C blocks apart: read line
// after line, the prefetcher streamed them and packing came out at
// 1.8-1.9 units a piece, where a standalone gather of 40-byte blocks as
// 2-lev-r,c packs them at p = 300 cost 1.8-2.6 units, and auto took 2-lev-r,c
// there, 29-31 % slower than 2-lev-sq; read down the columns, 2.0-3.8 units
// (what the shared cache costs moves with the other tenants), and auto took
// 2-lev-sq. (8 KiB messages: with 512 B ones the gathering was under half the
// superstep and moved by up to 24 % between calibrations; docs/cost-model.md,
// "Calibration's probes".)
constexpr std::uint64_t kGatherWords = 1024;
constexpr std::uint32_t kGatherSteps = 4;
constexpr std::uint64_t kGatherPieceWords = 1;
constexpr std::uint64_t kGatherStrideWords = 8;
using detail::gathered_line;
// Coherence beyond the private cache: a lockstep of kScaleProcesses processes
// with messages of kScaleBytes, so that each core writes 2 MiB of packed
// messages per superstep, twice a 1 MiB L2 (64 MiB of buffers in all).
constexpr Rank kScaleProcesses = 128;
constexpr std::uint32_t kScaleSteps = 4;
constexpr std::uint64_t kScaleBytes = 32 * 1024;
// The long message of the coherence term's second size: 32 packets, 2 MiB of
// buffers per core in all (a collective's working set is rarely in L2 either).
constexpr std::uint64_t kLongRendezvousBytes = 2048;
// The smallest rendezvous message: past the runtime's eager limit.
const std::uint64_t kRendezvousWords = RunOptions{}.eager_limit / 8 + 2;

std::byte pattern(std::uint64_t rank, std::uint64_t message, std::uint64_t offset) {
  return static_cast<std::byte>((rank * 131 + message * 31 + offset * 7 + 1) & 0xff);
}

// Rank 0 and rank 1 exchange a token, so that both are awake and past
// whatever the barrier left behind (a worker asleep, waking) before a clock starts.
Task<void> handshake(Process& p) {
  std::uint64_t token = p.rank(), in = 0;
  const Rank peer = 1 - p.rank();
  if (p.rank() == 0) co_await p.send(peer, std::as_bytes(std::span(&token, 1)), kHandshakeTag);
  co_await p.recv_into(peer, std::as_writable_bytes(std::span(&in, 1)), kHandshakeTag);
  if (p.rank() == 1) co_await p.send(peer, std::as_bytes(std::span(&token, 1)), kHandshakeTag);
}

// Seconds per message of `count` messages of `bytes` from rank 0 to rank 1
// (and from 1 to 0 at the same time when both_ways), on the cores the
// placement gives, until every message is received; one sample per
// repetition, the slower receiver's. Receives are posted before the
// handshake, sends after it. Message m has tag kFirstStreamTag + m; with
// `reversed` the receives are posted for the last message first, so that the
// arrival of message m walks past the count - 1 - m receives posted before its
// own (what a flood of messages costs the receiver's matching).
std::vector<double> stream(Runtime& rt, const RunOptions& placed, std::uint64_t bytes, std::uint32_t count,
                           bool both_ways, std::uint32_t repetitions, bool reversed = false) {
  std::vector<double> seconds(2 * std::size_t{repetitions}, 0.0);
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank(), peer = 1 - me;
        const bool sends = me == 0 || both_ways, receives = me == 1 || both_ways;
        std::vector<std::byte> out(count * bytes), in(count * bytes);
        for (std::uint64_t m = 0; m < count; ++m)
          for (std::uint64_t k = 0; k < bytes; ++k) out[m * bytes + k] = pattern(me, m, k);
        std::vector<SendTicket> sent(sends ? count : 0);
        std::vector<RecvTicket> received(receives ? count : 0);
        for (std::uint32_t r = 0; r < repetitions; ++r) {
          std::fill(in.begin(), in.end(), std::byte{0});
          co_await p.barrier();
          for (std::uint32_t k = 0; k < received.size(); ++k) {
            const std::uint32_t m = reversed ? count - 1 - k : k;
            received[k] = p.post_recv_into(peer, std::span(in).subspan(m * bytes, bytes), kFirstStreamTag + m);
          }
          co_await handshake(p);
          const auto start = Clock::now();
          for (std::uint32_t m = 0; m < sent.size(); ++m)
            sent[m] = p.post_send(peer, std::span<const std::byte>(out).subspan(m * bytes, bytes), kFirstStreamTag + m);
          co_await p.wait_all(received);
          // The receivers' clocks: the copies are theirs (single copy), while a
          // sender's completion waits for the receiver's answer, a latency.
          if (receives) seconds[2 * r + me] = std::chrono::duration<double>(Clock::now() - start).count() / count;
          co_await p.wait_all(sent);
          for (std::uint64_t m = 0; m < received.size(); ++m)
            for (std::uint64_t k = 0; k < bytes; ++k)
              if (in[m * bytes + k] != pattern(peer, m, k))
                throw std::runtime_error("switchyard model calibrate: message " + std::to_string(m) + " byte " +
                                         std::to_string(k) + " wrong");
        }
      },
      placed);
  std::vector<double> slower(repetitions);
  for (std::uint32_t r = 0; r < repetitions; ++r) slower[r] = std::max(seconds[2 * r], seconds[2 * r + 1]);
  return slower;
}

// Seconds of half a round trip of an 8-byte message, per repetition (on one
// core: a message and a switch to the other process).
std::vector<double> ping_pong(Runtime& rt, const RunOptions& placed, std::uint32_t repetitions) {
  std::vector<double> seconds(repetitions, 0.0);
  rt.run(
      2,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank(), peer = 1 - me;
        std::uint64_t value = 0;
        for (std::uint32_t r = 0; r < repetitions; ++r) {
          co_await p.barrier();
          co_await handshake(p);
          const auto start = Clock::now();
          for (std::uint64_t i = 0; i < kRoundTrips; ++i) {
            if (me == 0) {
              value = 2 * i;
              co_await p.send(peer, std::as_bytes(std::span(&value, 1)));
            }
            std::uint64_t in = 0;
            co_await p.recv_into(peer, std::as_writable_bytes(std::span(&in, 1)));
            if (in != 2 * i + peer)
              throw std::runtime_error("switchyard model calibrate: ping-pong " + std::to_string(i) + " wrong");
            if (me == 1) {
              value = 2 * i + 1;
              co_await p.send(peer, std::as_bytes(std::span(&value, 1)));
            }
          }
          if (me == 0) seconds[r] = std::chrono::duration<double>(Clock::now() - start).count() / (2 * kRoundTrips);
        }
      },
      placed);
  return seconds;
}

// How a lockstep ring shift sends: `words` 8-byte words per message, the
// payload written once before the first repetition (as a collective's send
// buffer: the receiver's core keeps a clean copy of what it read) or,
// `packed`, by the sender right before each send, as an algorithm packs a
// message (the previous repetition's receiver read those lines, so the writes
// must take them back from its core, and the receiver's copy must then read
// them out of the sender's cache).
// gathered_piece_words (with packed): the sender copies the message from a
// source buffer in pieces of this many words, each from its own cache line,
// by a memcpy whose length is read at run time (as copy_block's block length
// is in the collectives) instead of writing it; 0: it writes it.
struct LockstepKind {
  std::uint64_t words = 1;
  bool packed = false;
  std::uint64_t gathered_piece_words = 0;
};

// Seconds per superstep of a ring shift (process i sends a message to
// i + stride and waits for i - stride's, `steps` times, a buffer per step), per kind
// and repetition: every process blocks at the end of every superstep and is
// resumed for the next, as in 1-lev-perm, with its neighbours on the other
// core. The kinds run in turn within each repetition (in reverse order every
// other one), all in one job: result[k][r] and result[j][r] were taken moments
// apart under the same load, so their difference is a paired sample.
struct LockstepShape {
  Rank processes = kLockstepProcesses;
  std::uint32_t steps = kLockstepSteps;
  RunOptions placed{};  // the runtime's round robin unless a placement is given
  Rank stride = 1;  // process i sends to i + stride
};

std::vector<std::vector<double>> lockstep(Runtime& rt, std::uint32_t repetitions,
                                          const std::vector<LockstepKind>& kinds, LockstepShape shape = {}) {
  std::vector<std::vector<double>> seconds(kinds.size(), std::vector<double>(repetitions, 0.0));
  const std::uint32_t steps = shape.steps;
  const auto body = [&](Process& p) -> Task<void> {
    const Rank me = p.rank(), n = shape.processes, to = (me + shape.stride) % n, from = (me + n - shape.stride) % n;
    std::vector<std::vector<std::uint64_t>> out(kinds.size()), in(kinds.size()), source(kinds.size());
    const auto value = [&](Rank rank, std::uint64_t words, std::uint64_t k, std::uint64_t i) {
      return (std::uint64_t{rank} * steps + k) * words + i;
    };
    const auto pack = [&](std::size_t kind, std::uint64_t k) {
      const std::uint64_t words = kinds[kind].words;
      std::uint64_t* message = out[kind].data() + k * words;
      if (const std::uint64_t piece = kinds[kind].gathered_piece_words) {
        const std::uint64_t* pieces = source[kind].data() + k * (words / piece) * kGatherStrideWords;
        for (std::uint64_t j = 0; j < words / piece; ++j)
          std::memcpy(message + j * piece, pieces + gathered_line(j, words / piece) * kGatherStrideWords,
                      piece * sizeof(std::uint64_t));
      } else {
        for (std::uint64_t i = 0; i < words; ++i) message[i] = value(me, words, k, i);
      }
    };
    for (std::size_t kind = 0; kind < kinds.size(); ++kind) {
      out[kind].resize(kinds[kind].words * steps);
      in[kind].resize(kinds[kind].words * steps);
      if (const std::uint64_t piece = kinds[kind].gathered_piece_words) {
        const std::uint64_t words = kinds[kind].words;
        source[kind].resize(words / piece * steps * kGatherStrideWords);
        for (std::uint64_t w = 0; w < words * steps; ++w) {
          const std::uint64_t message = w / words, pieces = words / piece;
          const std::uint64_t line = message * pieces + gathered_line(w % words / piece, pieces);
          source[kind][line * kGatherStrideWords + w % piece] = value(me, words, message, w % words);
        }
      }
      if (!kinds[kind].packed)
        for (std::uint32_t k = 0; k < steps; ++k) pack(kind, k);
    }
    for (std::uint32_t r = 0; r < repetitions; ++r)
      for (std::size_t j = 0; j < kinds.size(); ++j) {
        const std::size_t kind = r % 2 ? kinds.size() - 1 - j : j;
        const std::uint64_t words = kinds[kind].words;
        co_await p.barrier();
        const auto start = Clock::now();
        for (std::uint32_t k = 0; k < steps; ++k) {
          if (kinds[kind].packed) pack(kind, k);
          RecvTicket got = p.post_recv_into(from, std::as_writable_bytes(std::span(in[kind]).subspan(k * words, words)),
                                            kFirstStreamTag);
          co_await p.send(to, std::as_bytes(std::span(out[kind]).subspan(k * words, words)), kFirstStreamTag);
          co_await p.wait(got);
          for (std::uint64_t i = 0; i < words; ++i)
            if (in[kind][k * words + i] != value(from, words, k, i))
              throw std::runtime_error("switchyard model calibrate: lockstep step " + std::to_string(k) + " wrong");
        }
        co_await p.barrier();
        if (me == 0) seconds[kind][r] = std::chrono::duration<double>(Clock::now() - start).count() / steps;
      }
  };
  rt.run(shape.processes, body, shape.placed);
  return seconds;
}

RunOptions on_cores(int a, int b) {
  RunOptions o;
  o.placement = Placement::explicit_map({a, b});
  return o;
}

// What an exchange of `measured_ms` took beyond the fixed `overhead_ms`. One
// with messages cannot take less than one without; where noise says
// otherwise, half of its time counts as beyond (a ratio stays positive).
double beyond_overhead_ms(double measured_ms, double overhead_ms) {
  return std::max(measured_ms - overhead_ms, measured_ms / 2);
}

// Each scheduler's time on m: in `jobs` jobs of o.repeat runs, the median
// over the jobs of each job's lower decile (ms). A job's buffers and plans
// land where they land for all of its runs: with one job of all the runs,
// the schedulers' ratios to ac moved by up to 33 % between 8 calibrations,
// and 6 calibrations chose alike in 19 of auto_regret.py's 24 cases (worst
// regret 1.03-1.31 on one measurement); with 7 jobs, 12 %, and 23 of 24
// (1.00-1.07).
std::map<std::string, double> exchange_times_ms(Runtime& rt, const schedulers::CommMatrix& m,
                                                const schedulers::ExchangeOptions& o, std::uint32_t jobs) {
  std::map<std::string, std::vector<double>> floors;
  for (std::uint32_t k = 0; k < jobs; ++k)
    for (const schedulers::SchedulerResult& r : schedulers::run_exchange(rt, m, o).results)
      floors[r.scheduler].push_back(low_quantile(r.comm_ms.samples));
  std::map<std::string, double> out;
  for (const auto& [name, job_floors] : floors) out[name] = median(job_floors);
  return out;
}

// The exchange corrections: each "auto" candidate run on calibration
// matrices (Fig. 7 pattern, at each of kCorrectionScales, their own seed) at
// kCorrectionBytes, measured (exchange_times_ms) less the fixed time of an
// exchange, an exchange of kCorrectionProcesses processes with nothing to
// send (ExchangeCorrection::overhead_ns_per_process, times the processes),
// over predicted by the uncorrected model. The candidates run interleaved,
// every repetition each once: a correction says how one scheduler stands
// against the others, and run one after the other, each in its own job, they
// met the shared cache in different states (lp's time over ac's at 16 KiB:
// 1.23 in one job, 1.52 in the next; interleaved 1.47 and 1.42).
void measure_exchange_corrections(Runtime& rt, MachineFile& f, std::uint32_t repetitions, std::uint32_t jobs) {
  schedulers::ExchangeOptions o;
  o.schedulers = schedulers::auto_scheduler_candidates();
  o.repeat = (repetitions + jobs - 1) / jobs;
  o.seed = kCorrectionSeed;
  o.time_generate_recv = false;
  o.interleave = true;
  const MachineFile uncorrected = f;
  f.exchange.bytes.assign(std::begin(kCorrectionBytes), std::end(kCorrectionBytes));
  schedulers::ExchangeOptions empty = o;
  empty.schedulers = {"ac"};
  const double overhead_ms = exchange_times_ms(rt, schedulers::CommMatrix(kCorrectionProcesses), empty, jobs).at("ac");
  f.measured["exchange_overhead_ns"] = 1e6 * overhead_ms;
  f.exchange.overhead_ns_per_process = 1e6 * overhead_ms / kCorrectionProcesses;
  for (const std::string& name : o.schedulers) f.exchange.ratio[name].resize(std::size(kCorrectionScales));
  for (std::size_t t = 0; t < std::size(kCorrectionScales); ++t) {
    const CorrectionScale scale = kCorrectionScales[t];
    // The pattern's messages do not depend on their size.
    f.exchange.messages_per_core.push_back(schedulers::messages_per_core(
        schedulers::fig7_matrix(scale.processes, scale.density, kCorrectionBytes[0], kCorrectionSeed), f.core));
    const double fixed_ms = overhead_ms * scale.processes / kCorrectionProcesses;
    for (std::uint64_t bytes : kCorrectionBytes) {
      const schedulers::CommMatrix m = schedulers::fig7_matrix(scale.processes, scale.density, bytes, kCorrectionSeed);
      const std::map<std::string, double> measured = exchange_times_ms(rt, m, o, jobs);
      const auto predictions =
          schedulers::predict_exchange(m, uncorrected, schedulers::ScheduleOptions{kCorrectionSeed, 0});
      for (const schedulers::SchedulerPrediction& p : predictions)
        f.exchange.ratio[p.scheduler][t].push_back(beyond_overhead_ms(measured.at(p.scheduler), fixed_ms) /
                                                   p.predicted_ms);
    }
  }
}

// Whether the cores were co-located (colocation.hpp) at this moment, by one
// round of kColocationProbeRuns hand-offs each way.
bool colocated_now(Runtime& rt) { return probe_colocation(rt, 1, kColocationProbeRuns).verdict.all_colocated(); }

// The exchange corrections describe the state the rest of the file does: in
// the other one, cross-core hand-offs cost a quarter as much and the ratios
// move with them. So they are measured between two probes of the state and
// measured again (after a pause) while either probe disagrees with the file;
// the last attempt's count of disagreeing probes is recorded.
void calibrate_exchanges(Runtime& rt, MachineFile& f, const CalibrationOptions& options) {
  std::uint32_t attempt = 0, disagreeing = 0;
  const MachineFile without = f;
  do {
    if (attempt++ > 0) std::this_thread::sleep_for(options.retry_pause);
    f = without;
    disagreeing = colocated_now(rt) != f.colocated;
    measure_exchange_corrections(rt, f, options.repetitions, options.rounds);
    disagreeing += colocated_now(rt) != f.colocated;
  } while (disagreeing > 0 && attempt < options.attempts);
  f.measured["exchange_attempts"] = attempt;
  f.measured["exchange_probes_in_other_state"] = disagreeing;
}

// The samples of every series (in seconds), per round: samples[name][round].
using RoundSamples = std::map<std::string, std::vector<std::vector<double>>>;

// Each figure: the names of the series it measures and a run of `reps`
// samples of each, in seconds (series run in one job are paired: sample r of
// each was taken in the same repetition).
// weight: how many times the others' runs per round it takes. The paired
// figures' differences are a few percent of their times, and their medians
// over 15 pairs a round moved by 25-45 % between rounds (the gathering's); they
// take more runs, at a few ms each.
struct Figure {
  std::vector<const char*> names;
  std::function<std::vector<std::vector<double>>(std::uint32_t)> run;
  std::uint32_t weight = 1;
};

// The host's state (host_state.hpp), once a round, beside the figures that
// follow it: recorded, not used by any parameter.
Figure host_state_figure(Runtime& rt, int a, int b) {
  Figure f{{"host_private_copy_ns", "host_gather_ns"}, nullptr};
  if (a != b) f.names.push_back("host_line_round_trip_ns");
  f.run = [&rt, a, b](std::uint32_t runs) {
    const HostStateSamples h = sample_host_state(rt.topology(), a, b, runs);
    std::vector<std::vector<double>> seconds;
    for (const std::vector<double>* ns : {&h.private_copy_ns_per_line, &h.gather_ns_per_piece, &h.line_round_trip_ns})
      if (!ns->empty()) {
        seconds.emplace_back();
        for (double x : *ns) seconds.back().push_back(1e-9 * x);
      }
    return seconds;
  };
  return f;
}

std::vector<Figure> figures(Runtime& rt) {
  const CalibrationCores cores = calibration_cores(rt);
  // Plain names, not a structured binding: the figures' lambdas capture them (Clang 14 cannot).
  const int a = cores.a, b = cores.b;
  const RunOptions cross = on_cores(a, b), same = on_cores(a, a);
  const auto one = [](const char* name, std::function<std::vector<double>(std::uint32_t)> run) {
    return Figure{{name}, [run = std::move(run)](std::uint32_t r) { return std::vector<std::vector<double>>{run(r)}; }};
  };
  const std::uint64_t rendezvous_words = kRendezvousWords, long_words = kLongRendezvousBytes / 8;
  const auto one_way_pair = [&](const char* cross_name, const char* same_name) {
    return std::vector<Figure>{one(cross_name, [&rt, cross](std::uint32_t r) { return ping_pong(rt, cross, r); }),
                               one(same_name, [&rt, same](std::uint32_t r) { return ping_pong(rt, same, r); })};
  };
  // The co-location check (round_verdict) pairs each of these cross-core and
  // same-core hand-offs by round; one pair opens the round, one closes it.
  std::vector<Figure> all = one_way_pair("one_way_8B_ns", "same_core_one_way_8B_ns");
  std::vector<Figure> middle{
      one("large_message_ns",
          [&rt, cross](std::uint32_t r) { return stream(rt, cross, kLargeBytes, kLargeCount, false, r); }),
      one("small_message_ns",
          [&rt, cross](std::uint32_t r) { return stream(rt, cross, kSmallBytes, kSmallCount, false, r); }),
      one("large_message_both_ways_ns",
          [&rt, cross](std::uint32_t r) { return stream(rt, cross, kLargeBytes, kLargeCount, true, r); }),
      // b pairs the two streams above and below by round: keep them adjacent.
      one("same_core_large_message_ns",
          [&rt, same](std::uint32_t r) { return stream(rt, same, kLargeBytes, kLargeCount, false, r); }),
      one("same_core_small_message_ns",
          [&rt, same](std::uint32_t r) { return stream(rt, same, kSmallBytes, kSmallCount, false, r); }),
      one("lockstep_superstep_ns", [&rt](std::uint32_t r) { return lockstep(rt, r, {LockstepKind{}}).front(); }),
      one("match_in_order_ns",
          [&rt, cross](std::uint32_t r) { return stream(rt, cross, 8, kMatchOutOfCacheEntries, false, r); }),
      one("match_reversed_ns",
          [&rt, cross](std::uint32_t r) { return stream(rt, cross, 8, kMatchOutOfCacheEntries, false, r, true); }),
      one("match_in_cache_in_order_ns",
          [&rt, cross](std::uint32_t r) { return stream(rt, cross, 8, kMatchInCacheEntries, false, r); }),
      one("match_in_cache_reversed_ns",
          [&rt, cross](std::uint32_t r) { return stream(rt, cross, 8, kMatchInCacheEntries, false, r, true); }),
      Figure{{"lockstep_rendezvous_ns", "lockstep_rendezvous_packed_ns", "lockstep_long_rendezvous_ns",
              "lockstep_long_rendezvous_packed_ns"},
             [&rt, rendezvous_words, long_words](std::uint32_t r) {
               return lockstep(
                   rt, r,
                   {{rendezvous_words, false}, {rendezvous_words, true}, {long_words, false}, {long_words, true}});
             },
             3},
      Figure{{"scale_rendezvous_ns", "scale_rendezvous_packed_ns"},
             [&rt](std::uint32_t r) {
               const std::uint64_t words = kScaleBytes / 8;
               return lockstep(rt, r, {{words, false}, {words, true}}, {kScaleProcesses, kScaleSteps});
             },
             2},
      // Every process on one core, each sending to the one half a round
      // later, as a collective's partners on one core are on average: 2 MiB
      // of other messages are written between a message's writing and its reading.
      Figure{{"scale_same_core_rendezvous_ns", "scale_same_core_rendezvous_packed_ns"},
             [&rt, a](std::uint32_t r) {
               const std::uint64_t words = kScaleBytes / 8;
               RunOptions one_core;
               one_core.placement = Placement::explicit_map(std::vector<int>(kScaleProcesses, a));
               return lockstep(rt, r, {{words, false}, {words, true}},
                               {kScaleProcesses, kScaleSteps, one_core, kScaleProcesses / 2});
             },
             2},
      Figure{{"lockstep_written_ns", "lockstep_gathered_ns"},
             [&rt](std::uint32_t r) {
               return lockstep(rt, r, {{kGatherWords, true}, {kGatherWords, true, kGatherPieceWords}},
                               {kLockstepProcesses, kGatherSteps});
             },
             5},
  };
  all.insert(all.end(), middle.begin(), middle.end());
  all.push_back(host_state_figure(rt, a, b));
  for (Figure& closing : one_way_pair("closing_one_way_8B_ns", "closing_same_core_one_way_8B_ns"))
    all.push_back(std::move(closing));
  return all;
}

// An even number, at least repetitions / rounds: the paired figures take
// their differences over pairs of runs (order_balanced_differences).
std::uint32_t runs_per_round(const CalibrationOptions& options) {
  const std::uint32_t at_least = (options.repetitions + options.rounds - 1) / options.rounds;
  return at_least + at_least % 2;
}

// Rounds of every figure in turn, so that a burst of other tenants' work
// lands on a few samples of every figure rather than on all of one.
RoundSamples measure_rounds(const std::vector<Figure>& all, const CalibrationOptions& options, std::uint64_t& done,
                            std::uint64_t steps) {
  RoundSamples samples;
  const std::uint32_t per_round = runs_per_round(options);
  for (std::uint32_t round = 0; round < options.rounds; ++round)
    for (const Figure& figure : all) {
      const std::vector<std::vector<double>> series = figure.run(per_round * figure.weight);
      for (std::size_t k = 0; k < series.size(); ++k) samples[figure.names[k]].push_back(series[k]);
      if (options.progress) options.progress(++done, steps, figure.names.front());
    }
  return samples;
}

// `other` - `base`, two series measured in the same job, per pair of
// repetitions in the kept rounds: each repetition gives a paired difference,
// and the two of a pair (which ran the kinds in opposite orders, lockstep())
// are averaged. The kind that runs second inherits the cache the first left:
// at scale on one core, the difference was nearly three times as large with
// the packed kind second as with it first (docs/cost-model.md,
// "Calibration's probes"), and the median of the unpaired differences fell
// between the two modes, moving by 18 % (bootstrap standard error) with
// the samples; averaged over both orders, 1.5 %.
std::vector<double> order_balanced_differences(const RoundSamples& samples, const std::vector<bool>& keep,
                                               const char* base, const char* other) {
  const std::vector<std::vector<double>>&a = samples.at(base), &b = samples.at(other);
  std::vector<double> out;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (keep[k])
      for (std::size_t r = 0; r + 1 < a[k].size(); r += 2)
        out.push_back((b[k][r] - a[k][r] + b[k][r + 1] - a[k][r + 1]) / 2);
  return out;
}

double median_paired_difference(const RoundSamples& samples, const std::vector<bool>& keep, const char* base,
                                const char* other) {
  return median(order_balanced_differences(samples, keep, base, other));
}

// Per round, the lower decile of `name`.
std::vector<double> round_quantiles(const RoundSamples& samples, const std::string& name) {
  std::vector<double> out;
  for (const std::vector<double>& round : samples.at(name)) out.push_back(low_quantile(round));
  return out;
}

// Coherence: a packed rendezvous message costs its sender's core more than
// the same message sent in place (each core sends per_core of them per
// superstep): x for the smallest rendezvous message (machine.hpp), x_p per
// packet beyond it, from two sizes. The four lockstep kinds ran in turn
// within every repetition, so each pair of repetitions gives an
// order-balanced difference packed - in place at each size
// (order_balanced_differences), and one of the two sizes' differences; their
// medians are kept. (Differences of two sizes' lower deciles, each from its
// own runs, moved x_p by 119 % between calibrations: a decile finds the floor
// of a time, and a difference has none.)
void derive_coherence(Machine& c, const RoundSamples& samples, const std::vector<bool>& keep,
                      std::map<std::string, double>& m) {
  const std::vector<double> short_extra = order_balanced_differences(samples, keep, "lockstep_rendezvous_ns",
                                                                     "lockstep_rendezvous_packed_ns"),
                            long_extra = order_balanced_differences(samples, keep, "lockstep_long_rendezvous_ns",
                                                                    "lockstep_long_rendezvous_packed_ns");
  std::vector<double> growth;
  for (std::size_t r = 0; r < short_extra.size(); ++r) growth.push_back(long_extra[r] - short_extra[r]);
  m["coherence_extra_ns"] = 1e9 * median(short_extra);
  m["coherence_long_extra_ns"] = 1e9 * median(long_extra);
  const double per_core = std::ceil(static_cast<double>(kLockstepProcesses) / static_cast<double>(c.cores));
  const double to_units = 1e9 / per_core / c.unit_ns;
  const double short_packets = std::ceil(8.0 * static_cast<double>(kRendezvousWords) / kCacheLine);
  const double long_packets = std::ceil(8.0 * static_cast<double>(kLongRendezvousBytes / 8) / kCacheLine);
  c.coherence_per_packet = std::max(0.0, median(growth) * to_units / (long_packets - short_packets));
  c.coherence = std::max(
      0.0, median(short_extra) * to_units - c.coherence_per_packet * (short_packets - c.smallest_rendezvous_packets()));
  // Beyond the private cache: what a packed message of kScaleBytes costs more
  // than one sent in place there, as a fraction of the charge above, to
  // another core and to the same one.
  const double charge = c.coherence_units(kScaleBytes);
  const auto fraction = [&](const char* in_place_name, const char* packed_name, const char* extra_name,
                            double per_core_at_scale) {
    m[extra_name] = 1e9 * median_paired_difference(samples, keep, in_place_name, packed_name);
    return charge > 0 ? std::max(0.0, m[extra_name] / per_core_at_scale / c.unit_ns / charge) : 1.0;
  };
  c.coherence_beyond_cache =
      fraction("scale_rendezvous_ns", "scale_rendezvous_packed_ns", "coherence_beyond_cache_extra_ns",
               std::ceil(static_cast<double>(kScaleProcesses) / static_cast<double>(c.cores)));
  c.coherence_beyond_cache_same_core =
      fraction("scale_same_core_rendezvous_ns", "scale_same_core_rendezvous_packed_ns",
               "coherence_beyond_cache_same_core_extra_ns", static_cast<double>(kScaleProcesses));
}

// Packing: gathering a lockstep message piece by piece costs each core more
// than writing it, per piece, pack_piece; from the paired differences of the
// repetitions, their median (as the coherence figures).
void derive_pack_piece(Machine& c, const RoundSamples& samples, const std::vector<bool>& keep,
                       std::map<std::string, double>& m) {
  m["gather_extra_ns"] = 1e9 * median_paired_difference(samples, keep, "lockstep_written_ns", "lockstep_gathered_ns");
  const double per_core = std::ceil(static_cast<double>(kLockstepProcesses) / static_cast<double>(c.cores));
  const double pieces = static_cast<double>(kGatherWords / kGatherPieceWords);
  c.pack_piece = std::max(0.0, m["gather_extra_ns"] / per_core / pieces / c.unit_ns);
}

// Per round, co-located when either the hand-offs that opened it or those
// that closed it say so: the state comes and goes within seconds, so a round
// is kept only when it was normal at both ends.
ColocationVerdict round_verdict(const RoundSamples& samples) {
  ColocationVerdict v =
      detect_colocation(round_quantiles(samples, "one_way_8B_ns"), round_quantiles(samples, "same_core_one_way_8B_ns"));
  const ColocationVerdict closing = detect_colocation(round_quantiles(samples, "closing_one_way_8B_ns"),
                                                      round_quantiles(samples, "closing_same_core_one_way_8B_ns"));
  v.normal = 0;
  for (std::size_t k = 0; k < v.colocated.size(); ++k) {
    v.colocated[k] = v.colocated[k] || closing.colocated[k];
    if (!v.colocated[k]) ++v.normal;
  }
  return v;
}

// The core level's parameters from the kept rounds' samples (m, filled here:
// per figure, in ns, the median over the kept rounds of each round's lower
// decile. The pooled lower decile took whichever round ran fastest: the
// first round's 16 KiB same-core copies ran 12 % faster than the other six's
// in four calibrations of four, and the unit moved by 11 % with whether that
// round was co-located, left out.)
void derive_parameters(Machine& c, const RoundSamples& samples, const std::vector<bool>& keep,
                       std::map<std::string, double>& m) {
  for (const auto& [name, rounds] : samples) {
    std::vector<double> floors;
    for (std::size_t k = 0; k < rounds.size(); ++k)
      if (keep[k]) floors.push_back(low_quantile(rounds[k]));
    m[name] = 1e9 * median(floors);
  }
  // The copy of one packet by one core: what every S_i and R_i counts. (The
  // cross-core streams vary far more from run to run on a shared machine.)
  c.unit_ns = m["same_core_large_message_ns"] / (kLargeBytes / kCacheLine);
  // The small message is one packet; what it costs beyond that is its set-up.
  c.setup = std::max(0.0, m["small_message_ns"] / c.unit_ns - 1);
  c.latency = std::max(0.0, (m["one_way_8B_ns"] - m["small_message_ns"]) / c.unit_ns);
  // Packets across the cut per unit: the two directions at once, each at a
  // core's own copy rate or slower when crossing cores costs more. The ratio
  // is taken per round, of two streams run one after the other, and the
  // median over rounds kept: under heavy load the both-ways stream (which
  // needs both cores at once) was hit in most runs of some rounds, and the
  // ratio of the pooled deciles moved by 43 % between calibrations.
  if (c.cores > 1) {
    const std::vector<double> copy = round_quantiles(samples, "same_core_large_message_ns"),
                              both = round_quantiles(samples, "large_message_both_ways_ns");
    std::vector<double> ratios;
    for (std::size_t k = 0; k < copy.size(); ++k)
      if (keep[k]) ratios.push_back(copy[k] / both[k]);
    m["bisection_copy_over_both_ways"] = median(ratios);
    c.bisection = std::max(1.0, 2 * std::min(1.0, m["bisection_copy_over_both_ways"]));
  } else {
    c.bisection = 1;
  }
  // ring-sync. A process resumed at the end of a superstep: a lockstep
  // superstep costs each core its processes' two messages (2 (s + 1) each)
  // and their resumption, plus the hand-off h; what is left per process is w.
  // (Half a same-core ping-pong less a stream's message, a switch with hot
  // caches, gave 5 units: a superstep's resumption also brings the process's
  // frame, mailbox and buffers back into the cache, ten times that.)
  const double per_core = std::ceil(static_cast<double>(kLockstepProcesses) / static_cast<double>(c.cores));
  c.wake = std::max(0.0, (m["lockstep_superstep_ns"] / c.unit_ns - c.latency) / per_core - 2 * (c.setup + 1));
  // Matching: received in reverse, the messages walk past N (N - 1) / 2
  // posted receives in all; per message, (N - 1) / 2 more than in order.
  const auto walk = [&](const char* in_order, const char* reversed, std::uint32_t count) {
    return std::max(0.0, (m[reversed] - m[in_order]) / ((count - 1) / 2.0) / c.unit_ns);
  };
  c.match = walk("match_in_order_ns", "match_reversed_ns", kMatchOutOfCacheEntries);
  c.match_in_cache = walk("match_in_cache_in_order_ns", "match_in_cache_reversed_ns", kMatchInCacheEntries);
  derive_coherence(c, samples, keep, m);
  derive_pack_piece(c, samples, keep, m);
}

}  // namespace

CalibrationCores calibration_cores(const Runtime& rt) {
  const std::vector<int>& cores = rt.cores();
  return {cores.at(0), cores.size() > 1 ? cores[1] : cores[0]};
}

ColocationProbe probe_colocation(Runtime& rt, std::uint32_t rounds, std::uint32_t runs) {
  if (rounds == 0 || runs == 0)
    throw std::invalid_argument("switchyard::model::probe_colocation: rounds and runs must be >= 1");
  const CalibrationCores cores = calibration_cores(rt);
  const RunOptions cross = on_cores(cores.a, cores.b), same = on_cores(cores.a, cores.a);
  ColocationProbe probe;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    probe.cross_core_one_way_ns.push_back(1e9 * low_quantile(ping_pong(rt, cross, runs)));
    probe.same_core_one_way_ns.push_back(1e9 * low_quantile(ping_pong(rt, same, runs)));
  }
  if (rt.cores().size() < 2) {
    probe.verdict.colocated.assign(rounds, false);
    probe.verdict.normal = rounds;
  } else {
    probe.verdict = detect_colocation(probe.cross_core_one_way_ns, probe.same_core_one_way_ns);
  }
  return probe;
}

// The rounds of the calibration's last attempt, and which of them describe
// the state the file does.
struct UsableRounds {
  RoundSamples samples;
  std::vector<bool> keep;  // per round
  bool colocated = false;  // the file describes the co-located state
  std::uint32_t attempts = 0;
  std::size_t colocated_rounds = 0, slow_rounds = 0;
};

// Which state the file describes: the normal one. The co-located state
// (colocation.hpp) comes and goes with the host's load; a calibration taken
// in it made auto's worst collective regret 1.69-1.81, where the same
// measurements (taken co-located as well) scored with a normal-state
// calibration gave 1.12-1.31: cross-core hand-offs priced at a quarter of
// their normal cost make perms and 3-lev-sq look cheap, and they are not
// when the state ends. So the rounds found co-located are left out, and only
// a machine that stays co-located through every attempt (as one whose cores
// really are hardware threads of one core would) is described in that
// state, marked as such. The slow rounds (slow_rounds.hpp) are left out in
// either case. The calibration is tried again (after a pause) while fewer
// than half its rounds are left, or every round was co-located; the last
// attempt keeps what it has (its rounds not co-located, if every one of
// those was slow).
UsableRounds measure_usable_rounds(Runtime& rt, const std::vector<Figure>& all, const CalibrationOptions& options,
                                   std::uint64_t& done, std::uint64_t& steps) {
  const bool one_core = rt.cores().size() < 2;
  UsableRounds u;
  while (u.attempts < options.attempts) {
    if (u.attempts++ > 0) {
      steps += options.rounds * all.size();
      std::this_thread::sleep_for(options.retry_pause);
    }
    u.samples = measure_rounds(all, options, done, steps);
    const ColocationVerdict verdict = round_verdict(u.samples);
    const std::vector<std::vector<double>> copies{round_quantiles(u.samples, "same_core_large_message_ns"),
                                                  round_quantiles(u.samples, "same_core_small_message_ns")};
    const std::vector<bool> slow = detect_slow_rounds(copies);
    u.colocated = !one_core && verdict.all_colocated();
    u.colocated_rounds = one_core ? 0 : options.rounds - verdict.normal;
    u.slow_rounds = static_cast<std::size_t>(std::count(slow.begin(), slow.end(), true));
    std::vector<bool> in_state(options.rounds), usable(options.rounds);
    for (std::size_t k = 0; k < in_state.size(); ++k) {
      in_state[k] = one_core || u.colocated || !verdict.colocated[k];
      usable[k] = in_state[k] && !slow[k];
    }
    const auto kept = static_cast<std::size_t>(std::count(usable.begin(), usable.end(), true));
    u.keep = kept > 0 ? usable : in_state;
    if (!u.colocated && 2 * kept >= options.rounds) break;
  }
  return u;
}

MachineFile calibrate(Runtime& rt, const CalibrationOptions& options) {
  if (options.repetitions == 0) throw std::invalid_argument("switchyard::model::calibrate: repetitions must be >= 1");
  if (options.rounds == 0) throw std::invalid_argument("switchyard::model::calibrate: rounds must be >= 1");
  if (options.attempts == 0) throw std::invalid_argument("switchyard::model::calibrate: attempts must be >= 1");
  const std::vector<int>& cores = rt.cores();
  const std::vector<Figure> all = figures(rt);
  std::uint64_t done = 0, steps = options.rounds * all.size() + 1;  // then the exchanges
  MachineFile f;
  Machine& c = f.core;
  c.name = "core to core (calibrated)";
  c.variant = ModelVariant::ring_sync;
  c.topology = Topology::fully_connected;
  c.cores = static_cast<std::uint32_t>(cores.size());
  c.shape = Shape{1, c.cores};
  c.packet_bytes = kCacheLine;
  const UsableRounds usable = measure_usable_rounds(rt, all, options, done, steps);
  f.colocated = usable.colocated;
  f.measured["attempts"] = usable.attempts;
  f.measured["runs"] = static_cast<double>(runs_per_round(options) * options.rounds);
  f.measured["colocated_rounds"] = static_cast<double>(usable.colocated_rounds);
  f.measured["slow_rounds"] = static_cast<double>(usable.slow_rounds);
  // Not measured: the runtime's defaults, which every job of `collective` and
  // ExchangePlan runs with (the coherence term is anchored at eager_limit).
  const RunOptions defaults;
  c.ring_bytes = defaults.ring_capacity * kCacheLine;
  c.eager_limit = defaults.eager_limit;
  // Not measured either: what hwloc reports.
  c.private_cache_bytes = rt.topology().private_cache_bytes();
  derive_parameters(c, usable.samples, usable.keep, f.measured);
  c.validate();
  calibrate_exchanges(rt, f, options);
  if (options.progress) options.progress(steps, steps, "exchanges");
  return f;
}

}  // namespace switchyard::model::calibration
