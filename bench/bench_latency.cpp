// Latency of small messages, against what the hardware allows.
//
//   BM_CachelineRoundTrip        two std::threads pinned to cores 0 and 1 bounce one
//                                std::atomic on its own cache line; Time = one round
//                                trip. The hardware limit of any cross-core exchange.
//   BM_TwoLinesOneWay_CrossCore  the same two threads, each storing into a cache
//                                line of its own and spinning on the other's: one
//                                line per direction, as any ring per ordered pair of
//                                cores has; Time = round trip / 2. limit_ns =
//                                cache-line round trip / 2: what a second line costs
//                                the hardware, with no software at all.
//   BM_OneWay_CrossCore          two processes on cores 0 and 1 ping-pong an 8-byte
//                                message (send + recv); Time = round trip / 2.
//                                limit_ns = cache-line round trip / 2; target: at
//                                most 3 x that limit (target_x = 3, target_ns =
//                                3 x limit_ns of the same batches). mpi_ns: Open
//                                MPI's ping-pong (latency_mpi pingpong: MPI_Send,
//                                MPI_Recv, 2 ranks bound to the two cores), one
//                                run per repetition, before its batches; x_mpi =
//                                Time / mpi_ns, target_x_mpi = 0.7. Beside them in
//                                every batch, BM_TwoLinesOneWay_CrossCore's one
//                                way (two_lines_ns, x_two_lines = Time / it,
//                                two_lines_x_mpi = it / mpi_ns: where the hardware
//                                alone stands against the MPI target).
//   BM_OneWay_CrossCore_RecvInto the same with recv_into a caller's buffer.
//   BM_RingOneWay_CrossCore      the core-to-core ring alone (detail::Channel, the
//                                rings the workers use): two threads pinned to cores
//                                0 and 1 ping-pong one packet of an 8-byte message
//                                (3 slots: header and payload), each pushing it into
//                                its ring towards the other and spinning on pop
//                                until the other's arrives; Time = round trip / 2.
//                                limit_ns = cache-line round trip / 2: what the ring
//                                costs beyond one line's transfer, the share of the
//                                ring in BM_OneWay_CrossCore.
//   BM_Burst64_CrossCore         rank 0 (core 0) posts 64 sends of an 8-byte message
//                                to rank 1 (core 1), which receives all 64, checking
//                                each, and answers with one 8-byte ack; Time = burst
//                                (first post to ack received) / 64, per message.
//                                limit_ns = cache-line round trip / 2, target 40 ns.
//                                mpi_ns: Open MPI's burst (latency_mpi burst: 64
//                                MPI_Isend + MPI_Waitall against 64 MPI_Irecv, the
//                                same ack), per message; target_x_mpi = 0.4.
//   BM_RingBurst64_CrossCore     the ring alone in BM_Burst64_CrossCore's traffic:
//                                a thread on core 0 pushes 64 one-cell packets
//                                (an 8-byte message's 3 slots), each as it is
//                                made, to a thread on core 1, which pops and
//                                checks each and answers with one packet; Time =
//                                burst / 64, per packet. limit_ns = cache-line
//                                round trip / 2; mpi_ns: Open MPI's burst, as
//                                above (x_mpi: where a ring of one cell per
//                                message stands against the burst's target).
//   BM_CoroutineSwitch_SameCore  two processes on core 0 alternate co_await
//                                p.yield(); Time = one switch. The floor of anything
//                                that hands the core to another process.
//   BM_SendSwitchRecv_SameCore   two processes on core 0 ping-pong an 8-byte message;
//                                Time = one one-way message = send + switch to the
//                                other process + its receive. limit_ns = one bare
//                                yield switch, target 40 ns.
//   BM_EmptyJob/procs:N          one job of N processes whose body returns at once,
//                                round robin on cores 0 and 1: rt.run from call to
//                                return (making the processes and their frames,
//                                starting the workers, tearing down); Time = per
//                                process. limit_ns = a plain loop that allocates N
//                                frames of the same body with the global operator
//                                new and N objects of Process's size and alignment,
//                                touches each and frees them all, per process, in
//                                the same batch: what the job costs beyond making
//                                its objects is its x_limit. Target: at most 2 x
//                                that limit (the job also routes, makes the world,
//                                and runs and finishes every process).
//
// Every figure line measures its limit in the same batch (see bench_common.hpp);
// the MPI baseline runs once per repetition, between the repetition's batches
// and the previous one's (mpirun starts processes: seconds, not a batch's
// milliseconds). Where latency_mpi or mpirun was not found at build time, or
// its run fails, the lines carry no mpi_ns (mpi_failed = 1 when it failed).

#include <array>
#include <coroutine>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backoff.hpp"
#include "channel.hpp"

#include "bench_common.hpp"

using namespace switchyard;
using sybench::Clock;
using sybench::kCoreA;
using sybench::kCoreB;

namespace {

// Operations per chunk; a batch is sybench::kChunks chunks (see bench_common.hpp).
constexpr int kCachelineRoundTrips = 1000;
constexpr int kCrossCoreRoundTrips = 250;
constexpr int kSameCoreRoundTrips = 1000;
constexpr int kYieldsPerProcess = 1000;
constexpr int kBursts = 50;  // bursts of kBurstMessages
constexpr int kBurstMessages = 64;
constexpr double kOneWayTargetXLimit = 3;
constexpr double kOneWayTargetXMpi = 0.7;
constexpr double kBurstTargetXMpi = 0.4;

#if defined(SWITCHYARD_LATENCY_MPI) && defined(SWITCHYARD_MPIRUN)
constexpr const char* kMpiProgram = SWITCHYARD_LATENCY_MPI;
constexpr const char* kMpirun = SWITCHYARD_MPIRUN;
#else
constexpr const char* kMpiProgram = nullptr;
constexpr const char* kMpirun = nullptr;
#endif
constexpr double kBurstTargetNs = 40;
constexpr double kSameCoreTargetNs = 40;
constexpr double kEmptyJobTargetXLimit = 2;

struct alignas(64) CacheLine {
  std::atomic<std::uint64_t> value{0};
  char pad[64 - sizeof(std::atomic<std::uint64_t>)];
};

// Seconds per operation of steps on two threads pinned to cores 0 and 1:
// step i is leader(i) on core 0 and follower(i) on core 1, each step
// `ops_per_step` operations; core 0 times chunks of `per_chunk` steps.
template <class Leader, class Follower>
double per_step_on_two_cores(int per_chunk, int ops_per_step, Leader leader, Follower follower) {
  sybench::ChunkTimer timer(per_chunk * ops_per_step);
  const std::uint64_t total = std::uint64_t{sybench::kChunks} * per_chunk;
  sybench::run_pinned_pair(
      kCoreA,
      [&] {
        timer.start();
        for (std::uint64_t i = 0; i < total; ++i) {
          leader(i);
          if ((i + 1) % per_chunk == 0) timer.lap();
        }
      },
      kCoreB,
      [&] {
        for (std::uint64_t i = 0; i < total; ++i) follower(i);
      });
  return timer.per_op();
}

// Seconds per round trip between a thread on core 0, which stores into
// `there` and spins on `back`, and one on core 1, which stores into `back`
// once it has seen the store. Plain spinning loads, no pause: the fastest a
// core can notice the other's store. The same line for both: one line
// carries both directions; two lines: one per direction.
double round_trip_through(CacheLine& there, CacheLine& back, int per_chunk) {
  return per_step_on_two_cores(
      per_chunk, 1,
      [&](std::uint64_t i) {
        there.value.store(2 * i + 1, std::memory_order_release);
        sybench::spin_until([&] { return back.value.load(std::memory_order_acquire) == 2 * i + 2; });
      },
      [&](std::uint64_t i) {
        sybench::spin_until([&] { return there.value.load(std::memory_order_acquire) == 2 * i + 1; });
        back.value.store(2 * i + 2, std::memory_order_release);
      });
}

// Seconds per round trip of one cache line between a thread on core 0 and one on core 1.
double cacheline_round_trip(int per_chunk) {
  CacheLine line;
  return round_trip_through(line, line, per_chunk);
}

// Seconds per round trip through two cache lines, one per direction.
double two_lines_round_trip(int per_chunk) {
  CacheLine there, back;
  return round_trip_through(there, back, per_chunk);
}

using detail::Channel;
using detail::Slot;
constexpr std::size_t kPacketSlots = 3;  // a header (2 slots) and an 8-byte payload: one cell
constexpr std::size_t kRingLines = 1024;

// A packet whose last slot starts with `value`, pushed whole (spinning while the ring is full).
void push_packet_of(Channel& out, std::uint64_t value) {
  std::array<Slot, kPacketSlots> packet{};
  std::memcpy(&packet[kPacketSlots - 1], &value, sizeof value);
  for (std::size_t put = 0; put < kPacketSlots;) put += out.push(packet.data() + put, kPacketSlots - put);
}

// Spins until a whole packet has come, and checks that it carries `expected`;
// gives up after sybench::kStallTimeout (the other thread failed). The
// clock is read only once a wait is long (65536 spins): a read costs about
// a cache line's transfer, and one per packet was charged to the ring.
void take_packet(Channel& in, std::uint64_t expected) {
  std::array<Slot, kPacketSlots> packet{};
  std::optional<Clock::time_point> give_up;
  detail::Backoff backoff;  // as a worker polls: checks back to back at first, then a pause between them
  for (std::size_t got = 0, spins = 0; got < kPacketSlots; ++spins) {
    const std::size_t n = in.pop(packet.data() + got, kPacketSlots - got);
    got += n;
    if (n == 0) backoff.wait([] { std::this_thread::yield(); });
    if (spins % 65536 == 65535) {
      if (!give_up) {
        give_up = Clock::now() + sybench::kStallTimeout;
      } else if (Clock::now() > *give_up) {
        throw std::runtime_error("ring: no packet came");
      }
    }
  }
  std::uint64_t value = 0;
  std::memcpy(&value, &packet[kPacketSlots - 1], sizeof value);
  if (value != expected) throw std::runtime_error("ring: got packet " + std::to_string(value));
}

// Seconds per one way of a 3-slot packet through two rings between threads pinned to cores 0 and 1.
double ring_round_trip(int per_chunk) {
  Channel there(kRingLines), back(kRingLines);
  return per_step_on_two_cores(
      per_chunk, 1,
      [&](std::uint64_t i) {
        push_packet_of(there, 2 * i);
        take_packet(back, 2 * i + 1);
      },
      [&](std::uint64_t i) {
        take_packet(there, 2 * i);
        push_packet_of(back, 2 * i + 1);
      });
}

// Seconds per packet of bursts of kBurstMessages one-cell packets through the
// ring alone, from a thread on core 0 to one on core 1, each packet pushed
// as it is made (as a process's post publishes it at once), each checked as
// it is popped, each burst answered by one packet: burst_per_message's
// traffic with no process, no header to build or match, no ticket.
double ring_burst_per_packet(int per_chunk) {
  Channel there(kRingLines), back(kRingLines);
  return per_step_on_two_cores(
      per_chunk, kBurstMessages,
      [&](std::uint64_t b) {
        for (std::uint64_t i = 0; i < kBurstMessages; ++i) push_packet_of(there, b * kBurstMessages + i);
        take_packet(back, b);
      },
      [&](std::uint64_t b) {
        for (std::uint64_t i = 0; i < kBurstMessages; ++i) take_packet(there, b * kBurstMessages + i);
        push_packet_of(back, b);
      });
}

std::span<const std::byte> bytes_of(const std::uint64_t& value) {
  return std::as_bytes(std::span<const std::uint64_t, 1>(&value, 1));
}

// Throws unless m is the 8-byte message `expected`.
void expect_value(const Message& m, std::uint64_t expected, const char* what) {
  std::uint64_t in = 0;
  if (m.size() != sizeof in) {
    throw std::runtime_error(std::string(what) + ": got " + std::to_string(m.size()) + " bytes, sent 8");
  }
  std::memcpy(&in, m.bytes().data(), sizeof in);
  if (in != expected) {
    throw std::runtime_error(std::string(what) + ": got " + std::to_string(in) + ", expected " +
                             std::to_string(expected));
  }
}

// Throws unless recv_into gave the 8-byte message `expected`.
void expect_received_into(std::uint64_t size, std::uint64_t in, std::uint64_t expected) {
  if (size != sizeof in || in != expected) {
    throw std::runtime_error("ping-pong (recv_into): got " + std::to_string(size) + " bytes, value " +
                             std::to_string(in) + ", expected 8 bytes, value " + std::to_string(expected));
  }
}

// Seconds per round trip of an 8-byte message between ranks 0 and 1, placed on
// the given OS cores, received with recv (into: with recv_into a buffer of 8
// bytes). Every payload is checked: rank 1 answers 2i with 2i + 1. The receive
// is awaited in the loop itself, as a user's program would: wrapped in a
// coroutine of its own (a Task per receive), each message would also pay a
// frame, a start and a return (about 20 ns on the same-core line).
double switchyard_round_trip(int per_chunk, int core0, int core1, bool into = false) {
  sybench::ChunkTimer timer(per_chunk);
  const std::uint64_t total = std::uint64_t{sybench::kChunks} * per_chunk;
  sybench::runtime().run(
      2,
      [&](Process& p) -> Task<void> {
        const bool first = p.rank() == 0;
        const Rank peer = first ? 1 : 0;
        std::uint64_t out = 0, in = 0;
        co_await p.barrier();
        if (first) timer.start();
        for (std::uint64_t i = 0; i < total; ++i) {
          if (first) {
            out = 2 * i;
            co_await p.send(peer, bytes_of(out));
          }
          const std::uint64_t expected = first ? 2 * i + 1 : 2 * i;
          if (into) {
            const auto buffer = std::as_writable_bytes(std::span<std::uint64_t, 1>(&in, 1));
            expect_received_into(co_await p.recv_into(peer, buffer), in, expected);
          } else {
            expect_value(co_await p.recv(peer), expected, "ping-pong");
          }
          if (!first) {
            out = 2 * i + 1;
            co_await p.send(peer, bytes_of(out));
          } else if ((i + 1) % per_chunk == 0) {
            timer.lap();
          }
        }
      },
      sybench::placed({core0, core1}));
  return timer.per_op();
}

// Seconds per message of bursts of kBurstMessages 8-byte messages from rank 0
// (core 0) to rank 1 (core 1), each burst answered by one 8-byte ack, rank 0
// timing chunks of `per_chunk` bursts. Message i of burst b carries
// b * kBurstMessages + i, the ack b; both ends check what they receive.
double burst_per_message(int per_chunk) {
  sybench::ChunkTimer timer(per_chunk * kBurstMessages);
  const std::uint64_t total = std::uint64_t{sybench::kChunks} * per_chunk;
  sybench::runtime().run(
      2,
      [&](Process& p) -> Task<void> {
        std::array<std::uint64_t, kBurstMessages> out{};  // each stays unchanged until its send completes
        std::array<SendTicket, kBurstMessages> sent;
        co_await p.barrier();
        if (p.rank() == 0) {
          timer.start();
          for (std::uint64_t b = 0; b < total; ++b) {
            for (std::size_t i = 0; i < out.size(); ++i) {
              out[i] = b * kBurstMessages + i;
              sent[i] = p.post_send(1, bytes_of(out[i]));
            }
            expect_value(co_await p.recv(1), b, "burst ack");
            co_await p.wait_all(sent);
            if ((b + 1) % per_chunk == 0) timer.lap();
          }
        } else {
          for (std::uint64_t b = 0; b < total; ++b) {
            for (std::uint64_t i = 0; i < kBurstMessages; ++i) {
              expect_value(co_await p.recv(0), b * kBurstMessages + i, "burst");
            }
            out[0] = b;
            co_await p.send(0, bytes_of(out[0]));
          }
        }
      },
      sybench::placed({kCoreA, kCoreB}));
  return timer.per_op();
}

// Seconds per switch: two processes on core 0 each yield, alternately; rank 0
// times chunks of `per_chunk` of its own yields, each of which spans 2 switches.
double yield_switch(int per_chunk) {
  sybench::ChunkTimer timer(2 * per_chunk);
  const int total = sybench::kChunks * per_chunk;
  sybench::runtime().run(
      2,
      [&](Process& p) -> Task<void> {
        co_await p.barrier();
        if (p.rank() == 0) timer.start();
        for (int i = 0; i < total; ++i) {
          co_await p.yield();
          if (p.rank() == 0 && (i + 1) % per_chunk == 0) timer.lap();
        }
      },
      sybench::placed({kCoreA, kCoreA}));
  return timer.per_op();
}

void BM_CachelineRoundTrip(benchmark::State& state) {
  try {
    for (auto _ : state) state.SetIterationTime(cacheline_round_trip(kCachelineRoundTrips));
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

// Open MPI's median seconds per operation of latency_mpi's `mode`, over
// `repetitions` of its own: nullopt where it was not built or its run failed
// (the reason goes to stderr).
std::optional<double> mpi_seconds(const char* mode, int repetitions) {
  if (!kMpiProgram) return std::nullopt;
  const std::string command =
      sybench::mpirun_two_ranks(kMpirun, kMpiProgram, std::string(mode) + " " + std::to_string(repetitions));
  const std::optional<double> us = sybench::baseline_median_us(command, "bench_latency");
  if (!us) return std::nullopt;
  return *us / 1e6;
}

// An Open MPI baseline of a line: latency_mpi's mode and the target as a multiple of it.
struct MpiBaseline {
  const char* mode = nullptr;
  double target_x = 0;
};

// A second limit measured in every batch beside the first: `name`_ns,
// x_`name` = figure / it, and `name`_x_mpi = it / MPI's time.
struct SecondLimit {
  const char* name = nullptr;
  double (*seconds)() = nullptr;
};

// Runs `figure` and its `limit` (and `second`'s) back to back in every batch
// and reports the figure with the limits and the target beside it, and with
// MPI's time of the same operation (run once, before the batches) where
// `mpi` names one.
template <class Figure, class Limit>
void figure_vs_limit(benchmark::State& state, Figure figure, Limit limit, double target_ns, double target_x_limit = 0,
                     MpiBaseline mpi = {}, SecondLimit second = {}) {
  const std::optional<double> mpi_s = mpi.mode ? mpi_seconds(mpi.mode, sybench::kBatches) : std::nullopt;
  double figures = 0, limits = 0, seconds = 0;
  try {
    for (auto _ : state) {
      const double l = limit();
      if (second.seconds) seconds += second.seconds();
      const double f = figure();
      state.SetIterationTime(f);
      figures += f;
      limits += l;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double n = static_cast<double>(state.iterations());
  sybench::report_vs_limit(state, figures / n, limits / n, target_ns, target_x_limit);
  if (second.seconds) {
    const std::string name = second.name;
    state.counters[name + "_ns"] = seconds / n * 1e9;
    state.counters["x_" + name] = figures / seconds;
    if (mpi_s) state.counters[name + "_x_mpi"] = seconds / n / *mpi_s;
  }
  if (mpi_s) {
    state.counters["mpi_ns"] = *mpi_s * 1e9;
    state.counters["x_mpi"] = figures / n / *mpi_s;
    state.counters["target_x_mpi"] = mpi.target_x;
  } else if (mpi.mode && kMpiProgram) {
    state.counters["mpi_failed"] = 1;
  }
}

double cacheline_one_way() { return cacheline_round_trip(kCachelineRoundTrips) / 2; }
double two_lines_one_way() { return two_lines_round_trip(kCachelineRoundTrips) / 2; }
// The one ways' second limit: any ring per ordered pair of cores moves one
// line per direction, each written by one core and read by the other.
constexpr SecondLimit kTwoLines{"two_lines", two_lines_one_way};

void BM_OneWay_CrossCore(benchmark::State& state) {
  figure_vs_limit(
      state, [] { return switchyard_round_trip(kCrossCoreRoundTrips, kCoreA, kCoreB) / 2; }, cacheline_one_way, 0,
      kOneWayTargetXLimit, {"pingpong", kOneWayTargetXMpi}, kTwoLines);
}

void BM_OneWay_CrossCore_RecvInto(benchmark::State& state) {
  figure_vs_limit(
      state, [] { return switchyard_round_trip(kCrossCoreRoundTrips, kCoreA, kCoreB, true) / 2; }, cacheline_one_way, 0,
      kOneWayTargetXLimit, {"pingpong", kOneWayTargetXMpi}, kTwoLines);
}

void BM_TwoLinesOneWay_CrossCore(benchmark::State& state) {
  figure_vs_limit(state, two_lines_one_way, cacheline_one_way, 0);
}

void BM_RingOneWay_CrossCore(benchmark::State& state) {
  figure_vs_limit(
      state, [] { return ring_round_trip(kCachelineRoundTrips) / 2; }, cacheline_one_way, 0);
}

void BM_Burst64_CrossCore(benchmark::State& state) {
  figure_vs_limit(state, [] { return burst_per_message(kBursts); }, cacheline_one_way, kBurstTargetNs, 0,
                  {"burst", kBurstTargetXMpi});
}

void BM_RingBurst64_CrossCore(benchmark::State& state) {
  figure_vs_limit(state, [] { return ring_burst_per_packet(kBursts); }, cacheline_one_way, 0, 0,
                  {"burst", kBurstTargetXMpi});
}

void BM_CoroutineSwitch_SameCore(benchmark::State& state) {
  try {
    for (auto _ : state) state.SetIterationTime(yield_switch(kYieldsPerProcess));
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
}

void BM_SendSwitchRecv_SameCore(benchmark::State& state) {
  figure_vs_limit(
      state, [] { return switchyard_round_trip(kSameCoreRoundTrips, kCoreA, kCoreA) / 2; },
      [] { return yield_switch(kYieldsPerProcess); }, kSameCoreTargetNs);
}

// A coroutine type whose frames come from the global operator new: the
// allocation a frame costs without the runtime's frame cache.
struct PlainTask {
  struct promise_type {
    PlainTask get_return_object() { return PlainTask{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept {}
  };
  std::coroutine_handle<promise_type> handle;
};

// Seconds per process of a plain loop making what an empty job of n makes:
// a frame of the same body and an object of Process's size and alignment.
double plain_allocation(std::uint64_t n) {
  std::vector<PlainTask> frames(n);
  std::vector<void*> objects(n);
  const auto start = Clock::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    frames[i] = [](Process*) -> PlainTask { co_return; }(nullptr);
    objects[i] = ::operator new (sizeof(Process), std::align_val_t{alignof(Process)});
    std::memset(objects[i], 0, sizeof(Process));
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    frames[i].handle.destroy();
    ::operator delete (objects[i], std::align_val_t{alignof(Process)});
  }
  return sybench::seconds_between(start, Clock::now()) / static_cast<double>(n);
}

// Seconds per process of one job of n processes that return at once.
double empty_job(std::uint64_t n) {
  const auto start = Clock::now();
  sybench::runtime().run(
      n, [](Process&) -> Task<void> { co_return; }, sybench::round_robin());
  return sybench::seconds_between(start, Clock::now()) / static_cast<double>(n);
}

void BM_EmptyJob(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  figure_vs_limit(
      state, [n] { return empty_job(n); }, [n] { return plain_allocation(n); }, 0, kEmptyJobTargetXLimit);
}

void common(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(sybench::kBatches)->ReportAggregatesOnly(true)->Unit(benchmark::kNanosecond);
}

BENCHMARK(BM_CachelineRoundTrip)->Apply(common);
BENCHMARK(BM_TwoLinesOneWay_CrossCore)->Apply(common);
BENCHMARK(BM_OneWay_CrossCore)->Apply(common);
BENCHMARK(BM_OneWay_CrossCore_RecvInto)->Apply(common);
BENCHMARK(BM_RingOneWay_CrossCore)->Apply(common);
BENCHMARK(BM_Burst64_CrossCore)->Apply(common);
BENCHMARK(BM_RingBurst64_CrossCore)->Apply(common);
BENCHMARK(BM_CoroutineSwitch_SameCore)->Apply(common);
BENCHMARK(BM_SendSwitchRecv_SameCore)->Apply(common);
BENCHMARK(BM_EmptyJob)->Apply(common)->ArgName("procs")->Arg(100000);

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(
      argc, argv,
      "latency: Time = ns per round trip (cache line), per one-way message, per switch, per process of an empty job");
}
