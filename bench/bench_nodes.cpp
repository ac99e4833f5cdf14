// Across nodes: switchyard between MPI ranks beside Open MPI in the same run.
// Run under mpirun, one MPI rank per node (mpi_bench_harness.hpp: every node
// runs every line in lock step, node 0 prints):
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core bench_nodes
//
//   BM_OneWay/bytes:B             ranks 0 and 1 of a 2-process job (default
//                                 placement: node 0 and node 1) ping-pong a
//                                 B-byte message (send + recv_into); Time = round
//                                 trip / 2. Beside it in every batch: MPI_Send /
//                                 MPI_Recv ping-pong between MPI ranks 0 and 1
//                                 (mpi_us), ratio_to_mpi = Time / MPI; target
//                                 ratio_to_mpi <= 1.2 (target_ratio).
//   BM_OneWayAfterIdle/gap_us:G   one 8-byte round trip after G us with
//                                 nothing to do (rank 0 sleeps first), 20 per
//                                 batch, each timed alone; Time = median round
//                                 trip / 2: what the idle workers' sleep costs.
//                                 Beside it: MPI_Send / MPI_Recv the same way
//                                 (MPI_Recv spins meanwhile). No target.
//   BM_Bandwidth/bytes:B          rank 0 streams B-byte messages to rank 1, two in
//                                 flight (post_send), rank 1 recv_into's one buffer
//                                 (single_copy.hpp); Time = one message. Beside it:
//                                 the same stream with MPI_Isend / MPI_Recv
//                                 between MPI ranks 0 and 1 (mpi_GiBps), and
//                                 memcpy of the same buffers on node 0's core
//                                 (memcpy_GiBps, the limit). ratio_to_mpi = GiBps /
//                                 mpi_GiBps; target ratio_to_mpi >= 0.9.
//   BM_Exchange/n:N/d:D/bytes:B/<scheduler>
//                                 one exchange of a Fig. 7 matrix (fig7_matrix, as
//                                 bench_exchange), N processes in blocks over the
//                                 nodes, every scheduler of the registry (drsn:
//                                 a receiver's busy lock is its node's, taken
//                                 from other nodes by request, as BM_BusyLock/
//                                 switchyard); Time =
//                                 first process out of the barrier to the last one
//                                 done, over all nodes (steady_clock is one clock on
//                                 this machine), median of the batch's exchanges.
//                                 Beside it: the same matrix by MPI_Alltoallv with
//                                 one MPI rank per node, each node's processes'
//                                 messages packed per destination node
//                                 (mpi_alltoallv_exchange.hpp): mpi_us,
//                                 ratio_to_mpi = Time / MPI. Every byte of both
//                                 is verified after every exchange. drsn:
//                                 inquiries = busy-lock tries per exchange,
//                                 summed over the nodes (a try of another
//                                 node's lock counts one, as a local one).
//   BM_Collective/<op>/bytes:B    a collective (barrier, broadcast from rank 0,
//                                 allreduce of B/8 int64, allgather of B bytes a
//                                 process) over every process of a job of 4
//                                 processes a node (ranks in blocks over the
//                                 nodes); Time = one collective (messages
//                                 between the cores' leaders for the step
//                                 between nodes). Beside it: MPI_Barrier /
//                                 MPI_Bcast / MPI_Allreduce / MPI_Allgather with
//                                 one MPI rank per node on the nodes' shares
//                                 (mpi_us, ratio_to_mpi). Every result of both is
//                                 checked byte for byte.
//   BM_BusyLock/<method>          pure MPI: node 0 acquires and releases a
//                                 test-and-set lock that lives on node 1, the busy
//                                 lock of DRS_N across nodes; Time = one acquire +
//                                 release. rma: MPI_Compare_and_swap + MPI_Win_flush
//                                 to acquire, MPI_Accumulate(MPI_REPLACE) + flush to
//                                 release, on an MPI_Win_allocate window in one
//                                 MPI_Win_lock_all epoch. am: an active message to
//                                 the owner: a request and a reply to acquire, a
//                                 one-way message to release. In both, node 1 runs
//                                 a worker's polling loop (MPI_Test on a posted
//                                 MPI_Irecv), which also gives MPI progress. With
//                                 3 or more nodes, nodes 2.. contend for the same
//                                 lock. Counter: attempts (per acquire, node 0).
//                                 switchyard: the runtime's busy lock across
//                                 nodes (Communicator::try_busy_lock): rank 0
//                                 (node 0) takes and gives back the lock of
//                                 rank 1 (node 1), one process per node, those
//                                 of nodes 2.. contending; a try is a packet to
//                                 rank 1's core, which test-and-sets the lock's
//                                 CPU atomic and answers; a release is one
//                                 packet. DRS_N's drsn lines above use it.
//                                 rma_in_runtime: rma's calls, made by the
//                                 processes of a switchyard job on their
//                                 worker threads (what DRS_N would do with MPI
//                                 one-sided CAS, every acquire, local ones
//                                 too, through the window).
//
// How the switchyard lines read before the MPI transport is built in: each
// node then runs its own one-node job, so the switchyard figure is within a
// node (both ranks on this node's core; every node times its own job and the
// line reports the slower node's figure) and only the MPI baselines cross
// nodes. The program is the same; the mpi_nodes context line says how many
// nodes ran.

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <switchyard/schedulers/exchange_plan.hpp>
#include <switchyard/schedulers/generate_recv.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <switchyard/schedulers/scheduler_table.hpp>
#include <switchyard/span_timer.hpp>
#include <thread>
#include <vector>

#include "mpi_alltoallv_exchange.hpp"
#include "mpi_bench_harness.hpp"
#include "single_copy.hpp"

using namespace switchyard;
using namespace switchyard::schedulers;
using sybench::mpi::agreed;
using sybench::mpi::node;
using sybench::mpi::node_runtime;
using sybench::mpi::nodes;

namespace {

// The point-to-point lines need MPI ranks 0 and 1: with fewer nodes (no
// mpirun) they say so instead of a figure. The same on every node.
bool skip_unless_two_nodes(benchmark::State& state) {
  if (nodes() >= 2) return false;
  state.SkipWithError("needs 2 nodes or more (mpirun -np 2)");
  return true;
}

constexpr double kLatencyTargetRatio = 1.2;  // switchyard / MPI, at most
constexpr double kBandwidthTargetRatio = 0.9;  // switchyard / MPI, at least
constexpr int kRoundTripsPerChunk = 100;
constexpr int kBandwidthInFlight = 2;
constexpr int kLockPairsPerChunk = 100;
constexpr std::uint64_t kMatrixSeed = 42;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// ---------------------------------------------------------------- latency

// A ping-pong message: a sequence number in its first 8 bytes, a fixed
// pattern after them. The responder echoes what it received with the number
// raised by one, so the pattern that comes back has crossed twice; it is
// checked once, after the last round trip, off the clock.
class EchoBuffer {
 public:
  explicit EchoBuffer(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 8)) {
    for (std::size_t i = 8; i < bytes_.size(); ++i) bytes_[i] = static_cast<std::byte>(i * 29 + 3);
  }
  std::span<std::byte> span() { return bytes_; }
  void stamp(std::uint64_t sequence) { std::memcpy(bytes_.data(), &sequence, sizeof sequence); }
  void expect(std::uint64_t size, std::uint64_t sequence) const {
    std::uint64_t got = 0;
    std::memcpy(&got, bytes_.data(), sizeof got);
    if (size != bytes_.size() || got != sequence) {
      throw std::runtime_error("ping-pong: got " + std::to_string(size) + " bytes numbered " + std::to_string(got) +
                               ", expected " + std::to_string(bytes_.size()) + " numbered " + std::to_string(sequence));
    }
  }
  void verify_pattern() const {
    for (std::size_t i = 8; i < bytes_.size(); ++i) {
      if (bytes_[i] != static_cast<std::byte>(i * 29 + 3)) {
        throw std::runtime_error("ping-pong: byte " + std::to_string(i) + " of the last " +
                                 std::to_string(bytes_.size()) + "-byte message is wrong");
      }
    }
  }

 private:
  std::vector<std::byte> bytes_;
};

// Seconds per one-way message of a switchyard ping-pong between ranks 0 and 1,
// on the node hosting rank 0 (0 elsewhere).
double switchyard_one_way(std::size_t bytes) {
  sybench::ChunkTimer timer(kRoundTripsPerChunk);
  const std::uint64_t total = std::uint64_t{sybench::kChunks} * kRoundTripsPerChunk;
  node_runtime().run(
      2,
      [&](Process& p) -> Task<void> {
        EchoBuffer buf(bytes);
        co_await p.barrier();
        if (p.rank() == 0) {
          timer.start();
          for (std::uint64_t i = 0; i < total; ++i) {
            buf.stamp(2 * i);
            co_await p.send(1, buf.span());
            buf.expect(co_await p.recv_into(1, buf.span()), 2 * i + 1);
            if ((i + 1) % kRoundTripsPerChunk == 0) timer.lap();
          }
          buf.verify_pattern();
        } else {
          for (std::uint64_t i = 0; i < total; ++i) {
            buf.expect(co_await p.recv_into(0, buf.span()), 2 * i);
            buf.stamp(2 * i + 1);
            co_await p.send(0, buf.span());
          }
        }
      },
      sybench::default_placement());
  return timer.per_op() / 2;
}

// The same ping-pong with MPI_Send / MPI_Recv between MPI ranks 0 and 1, one
// untimed round trip first; seconds per one-way message on node 0 (0 elsewhere).
double mpi_one_way(std::size_t bytes) {
  const int me = node();
  if (me > 1) return 0;
  EchoBuffer buf(bytes);
  const int peer = 1 - me, count = static_cast<int>(buf.span().size());
  auto exchange = [&](std::uint64_t i) {
    MPI_Status status;
    int got = 0;
    if (me == 0) {
      buf.stamp(2 * i);
      MPI_Send(buf.span().data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.span().data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &status);
      MPI_Get_count(&status, MPI_BYTE, &got);
      buf.expect(static_cast<std::uint64_t>(got), 2 * i + 1);
    } else {
      MPI_Recv(buf.span().data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &status);
      MPI_Get_count(&status, MPI_BYTE, &got);
      buf.expect(static_cast<std::uint64_t>(got), 2 * i);
      buf.stamp(2 * i + 1);
      MPI_Send(buf.span().data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
    }
  };
  const std::uint64_t total = std::uint64_t{sybench::kChunks} * kRoundTripsPerChunk;
  exchange(total);  // untimed; its numbers are outside the timed ones
  sybench::ChunkTimer timer(kRoundTripsPerChunk);
  timer.start();
  for (std::uint64_t i = 0; i < total; ++i) {
    exchange(i);
    if ((i + 1) % kRoundTripsPerChunk == 0) timer.lap();
  }
  if (me == 0) buf.verify_pattern();
  return me == 0 ? timer.per_op() / 2 : 0;
}

void BM_OneWay(benchmark::State& state) {
  if (skip_unless_two_nodes(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  double figure = 0, mpi = 0;
  try {
    for (auto _ : state) {
      const auto [m, s] = agreed<2>([&] { return std::array{mpi_one_way(bytes), switchyard_one_way(bytes)}; });
      state.SetIterationTime(s);
      figure += s;
      mpi += m;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double batches = static_cast<double>(state.iterations());
  state.counters["mpi_us"] = mpi / batches * 1e6;
  state.counters["ratio_to_mpi"] = figure / mpi;
  state.counters["target_ratio"] = kLatencyTargetRatio;
}

// ---------------------------------------------------------------- latency after idling

// What the idle policy costs: one round trip of 8 bytes after both sides have
// had nothing to do for `gap` (rank 0 sleeps, rank 1 waits in a receive; a
// switchyard worker with nothing to do spins and yields 500 us, then sleeps
// up to 1 ms at a time, since nothing rings it when MPI has a packet for it).
// kChunks round trips per batch, each timed alone; seconds per one-way message
// in the median one, on the node of rank 0 (0 elsewhere).
double switchyard_one_way_after_idle(std::chrono::microseconds gap) {
  sybench::ChunkTimer timer(2);
  node_runtime().run(
      2,
      [&](Process& p) -> Task<void> {
        EchoBuffer buf(8);
        co_await p.barrier();
        for (std::uint64_t i = 0; i < sybench::kChunks; ++i) {
          if (p.rank() == 0) {
            co_await p.sleep_for(gap);
            timer.start();
            buf.stamp(2 * i);
            co_await p.send(1, buf.span());
            buf.expect(co_await p.recv_into(1, buf.span()), 2 * i + 1);
            timer.lap();
          } else {
            buf.expect(co_await p.recv_into(0, buf.span()), 2 * i);
            buf.stamp(2 * i + 1);
            co_await p.send(0, buf.span());
          }
        }
      },
      sybench::default_placement());
  return timer.per_op();
}

// The same with MPI_Send / MPI_Recv (rank 1 waits in MPI_Recv, which spins).
double mpi_one_way_after_idle(std::chrono::microseconds gap) {
  const int me = node();
  if (me > 1) return 0;
  EchoBuffer buf(8);
  const int count = static_cast<int>(buf.span().size());
  sybench::ChunkTimer timer(2);
  for (std::uint64_t i = 0; i < sybench::kChunks; ++i) {
    if (me == 0) {
      std::this_thread::sleep_for(gap);
      timer.start();
      buf.stamp(2 * i);
      MPI_Send(buf.span().data(), count, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.span().data(), count, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      buf.expect(static_cast<std::uint64_t>(count), 2 * i + 1);
      timer.lap();
    } else {
      MPI_Recv(buf.span().data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      buf.expect(static_cast<std::uint64_t>(count), 2 * i);
      buf.stamp(2 * i + 1);
      MPI_Send(buf.span().data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return me == 0 ? timer.per_op() : 0;
}

void BM_OneWayAfterIdle(benchmark::State& state) {
  if (skip_unless_two_nodes(state)) return;
  const std::chrono::microseconds gap(state.range(0));
  double figure = 0, mpi = 0;
  try {
    for (auto _ : state) {
      const auto [m, s] = agreed<2>([&] {
        return std::array{mpi_one_way_after_idle(gap), switchyard_one_way_after_idle(gap)};
      });
      state.SetIterationTime(s);
      figure += s;
      mpi += m;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  state.counters["mpi_us"] = mpi / static_cast<double>(state.iterations()) * 1e6;
  state.counters["ratio_to_mpi"] = figure / mpi;
}

// ---------------------------------------------------------------- bandwidth

// MPI's side of BM_Bandwidth: MPI rank 0 streams buf.src to MPI rank 1 with
// `in_flight` MPI_Isend in flight, rank 1 MPI_Recv's into buf.dst and times
// chunks of `per_chunk` messages, after one untimed message and a zero-byte
// "ready"; seconds per message on node 1 (0 elsewhere). The first and the last
// message are checked byte for byte, as single_copy_time checks switchyard's.
double mpi_stream_time(sybench::CopyBuffers& buf, int per_chunk, int in_flight) {
  const int me = node();
  if (me > 1) return 0;
  const int count = static_cast<int>(buf.size), messages = sybench::kChunks * per_chunk;
  if (me == 0) {
    MPI_Send(buf.src, count, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    MPI_Recv(nullptr, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::vector<MPI_Request> window(static_cast<std::size_t>(in_flight), MPI_REQUEST_NULL);
    for (int i = 0; i < messages; ++i) {
      MPI_Request& slot = window[static_cast<std::size_t>(i % in_flight)];
      MPI_Wait(&slot, MPI_STATUS_IGNORE);  // returns at once on MPI_REQUEST_NULL
      MPI_Isend(buf.src, count, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &slot);
    }
    MPI_Waitall(in_flight, window.data(), MPI_STATUSES_IGNORE);
    return 0;
  }
  auto receive = [&] {
    MPI_Status status;
    int got = 0;
    MPI_Recv(buf.dst, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (got != count) {
      throw std::runtime_error("MPI stream: " + std::to_string(got) + " bytes, sent " + std::to_string(count));
    }
  };
  std::memset(buf.dst, static_cast<int>(sybench::kPoison), buf.size);
  receive();
  buf.check("first");
  std::memset(buf.dst, static_cast<int>(sybench::kPoison), buf.size);
  MPI_Send(nullptr, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
  sybench::ChunkTimer timer(per_chunk);
  timer.start();
  for (int i = 0; i < messages; ++i) {
    receive();
    if ((i + 1) % per_chunk == 0) timer.lap();
  }
  buf.check("last");
  return timer.per_op();
}

void BM_Bandwidth(benchmark::State& state) {
  if (skip_unless_two_nodes(state)) return;
  sybench::CopyBuffers buf(static_cast<std::size_t>(state.range(0)), 0);
  const int per_chunk = sybench::per_chunk_for(buf.size);
  const int cpu = node_runtime().cores().front();
  double figure = 0, mpi = 0, limit = 0;
  try {
    for (auto _ : state) {
      const auto [c, m, s] = agreed<3>([&] {
        return std::array{node() == 0 ? sybench::memcpy_time(buf, per_chunk, cpu) : 0.0,
                          mpi_stream_time(buf, per_chunk, kBandwidthInFlight),
                          sybench::single_copy_time(node_runtime(), buf, per_chunk, kBandwidthInFlight,
                                                    sybench::default_placement())};
      });
      state.SetIterationTime(s);
      figure += s;
      mpi += m;
      limit += c;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  const double batches = static_cast<double>(state.iterations()), bytes = static_cast<double>(buf.size);
  const double gibps = bytes / (figure / batches) / kGiB, mpi_gibps = bytes / (mpi / batches) / kGiB;
  state.counters["GiBps"] = gibps;
  state.counters["mpi_GiBps"] = mpi_gibps;
  state.counters["memcpy_GiBps"] = bytes / (limit / batches) / kGiB;
  state.counters["ratio_to_mpi"] = gibps / mpi_gibps;
  state.counters["target_ratio"] = kBandwidthTargetRatio;
}

// ---------------------------------------------------------------- exchange

struct ExchangeConfig {
  Rank n, d;
  std::uint64_t bytes;
  std::uint32_t exchanges;  // per batch, for each of switchyard and MPI
  int batches;  // per repetition: fewer where one exchange moves hundreds of MiB
};

const std::vector<ExchangeConfig>& exchange_configs() {
  static const std::vector<ExchangeConfig> all{
      {32, 8, 16, 20, sybench::kBatches},    {32, 8, 1024, 20, sybench::kBatches},
      {32, 8, 65536, 10, sybench::kBatches}, {512, 16, 16, 10, sybench::kBatches},
      {512, 16, 1024, 5, sybench::kBatches}, {512, 16, 65536, 1, 3},
  };
  return all;
}

// Process r's node under the default placement: blocks of ceil(n / nodes).
std::vector<int> block_owner(Rank n) {
  const Rank block = (n + static_cast<Rank>(nodes()) - 1) / static_cast<Rank>(nodes());
  std::vector<int> owner(n);
  for (Rank r = 0; r < n; ++r) owner[r] = static_cast<int>(r / block);
  return owner;
}

using BufferSet = std::vector<std::unique_ptr<ExchangeBuffers>>;

// One line's switchyard side: the buffers of the processes this node hosts
// (made in their first job, on their cores, and kept: `buffers` has one slot
// per process) and, except for a scheduler whose processes plan in every run
// (drsn), the plan of the whole matrix, made once.
class SwitchyardExchange {
 public:
  SwitchyardExchange(const CommMatrix& m, const std::string& scheduler, BufferSet& buffers) : m_(m), buffers_(buffers) {
    options_.scheduler = scheduler;
    options_.seed = kMatrixSeed;
    if (!find_scheduler(scheduler)->traits.plan_per_run) plan_.emplace(m, options_);
  }
  std::uint64_t phases() const { return plan_ ? plan_->phases() : 0; }

  // Runs `exchanges` exchanges, each poisoned before and verified after, off
  // the clock. Returns, per exchange, -(earliest start) and the latest end, in
  // seconds of steady_clock, over the processes of this node; or, if this node
  // ran every process of the job (a build without the MPI transport: every
  // node runs its own job), each exchange's span in the first slot and 0 in
  // the second, so that no other node's clock is mixed in.
  std::vector<double> run(std::uint32_t exchanges) {
    const Rank n = m_.size();
    SpanTimer timer(node_runtime(), exchanges);
    std::vector<std::uint64_t> inquiries(n, 0);  // per rank: each written by its own process only
    GenerateRecvByActiveMessages generate(n);
    RunOptions options = sybench::default_placement();
    if (!plan_) generate.install(options);
    node_runtime().run(
        n,
        [&](Process& p) -> Task<void> {
          const Rank me = p.rank();
          if (!buffers_[me]) buffers_[me] = std::make_unique<ExchangeBuffers>(m_, me, kMatrixSeed);
          ExchangeBuffers& b = *buffers_[me];
          const std::vector<std::span<const std::byte>> send = b.send_buffers();
          const std::vector<std::span<std::byte>> recv = b.recv_buffers();
          for (std::uint32_t x = 0; x < exchanges; ++x) {
            b.poison();
            co_await p.barrier();
            std::optional<ExchangePlan> mine;
            if (!plan_) {
              ExchangePlanOptions po = options_;
              po.seed = options_.seed + 1 + runs_ * exchanges + x;  // a new DRS_N order in every run
              po.generate_recv = &generate;
              mine = co_await ExchangePlan::create(p, b.row(), std::move(po));
              co_await p.barrier();
            }
            const ExchangePlan& plan = plan_ ? *plan_ : *mine;
            timer.start(x, p);
            const ExchangeRunStats run_stats = co_await plan.run(p, send, recv);
            timer.end(x, p);
            inquiries[me] += run_stats.busy_lock_inquiries;
            co_await p.barrier();
            if (auto bad = b.verify()) {
              throw PayloadError("exchange '" + options_.scheduler + "', exchange " + std::to_string(x + 1), *bad);
            }
          }
        },
        options);
    ++runs_;
    exchanges_ += exchanges;
    for (std::uint64_t k : inquiries) inquiries_ += k;
    return spans(timer, exchanges);
  }
  // DRS_N's busy-lock inquiries per exchange so far, summed over every node's
  // processes (collective over the nodes); 0 for the other schedulers.
  double inquiries_per_exchange() const {
    double v[2] = {static_cast<double>(inquiries_), static_cast<double>(exchanges_)};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return v[1] > 0 ? v[0] / v[1] : 0;
  }

 private:
  std::vector<double> spans(const SpanTimer& timer, std::uint32_t exchanges) const {
    const RankRange mine = node_runtime().local_ranks(m_.size());
    const bool whole_job = mine.end - mine.first == m_.size();
    std::vector<double> out;
    for (std::uint32_t x = 0; x < exchanges; ++x) {
      const auto [from, to] = timer.bounds(x);
      if (whole_job) {
        out.insert(out.end(), {std::chrono::duration<double>(to - from).count(), 0.0});
      } else {
        out.insert(out.end(), {-std::chrono::duration<double>(from.time_since_epoch()).count(),
                               std::chrono::duration<double>(to.time_since_epoch()).count()});
      }
    }
    return out;
  }

  const CommMatrix& m_;
  ExchangePlanOptions options_;
  std::optional<ExchangePlan> plan_;
  BufferSet& buffers_;
  std::uint64_t runs_ = 0;
  std::uint64_t exchanges_ = 0, inquiries_ = 0;  // this node's processes'
};

// Median seconds per exchange from SwitchyardExchange::run's values, each
// already the maximum over the nodes.
double median_span(std::span<const double> v) {
  std::vector<double> spans;
  for (std::size_t i = 0; i + 1 < v.size(); i += 2) spans.push_back(v[i + 1] == 0 ? v[i] : v[i] + v[i + 1]);
  return summarize(std::move(spans)).median;
}

// What the exchange line that ran last made: Google Benchmark calls a line's
// function once per repetition, and the buffers and plans of the larger
// matrices take seconds to make. The matrix, the buffers and MPI's side are
// kept for every scheduler of a configuration.
struct ExchangeLine {
  explicit ExchangeLine(const ExchangeConfig& c)
      : config(&c),
        m(fig7_matrix(c.n, c.d, c.bytes, kMatrixSeed)),
        buffers(c.n),
        theirs(sybench::plan_exchange(m, kMatrixSeed, node(), nodes(), block_owner(c.n))) {}
  const ExchangeConfig* config;
  CommMatrix m;
  BufferSet buffers;
  sybench::RankExchange theirs;
  std::string scheduler;
  std::unique_ptr<SwitchyardExchange> mine;
};

ExchangeLine& exchange_line(const ExchangeConfig& c, const std::string& scheduler) {
  static std::unique_ptr<ExchangeLine> line;
  if (!line || line->config != &c) {
    line.reset();  // before the next one is made: the 64 KiB lines hold GiBs
    line = std::make_unique<ExchangeLine>(c);
  }
  if (line->scheduler != scheduler) {
    line->mine = std::make_unique<SwitchyardExchange>(line->m, scheduler, line->buffers);
    line->scheduler = scheduler;
  }
  return *line;
}

void BM_Exchange(benchmark::State& state, const ExchangeConfig& c, const std::string& scheduler) {
  double figure = 0, mpi = 0, phases = 0, inquiries = 0;
  try {
    ExchangeLine& line = exchange_line(c, scheduler);
    phases = static_cast<double>(line.mine->phases());
    for (auto _ : state) {
      const std::vector<double> v = sybench::mpi::agreed_values(1 + 2 * std::size_t{c.exchanges}, [&] {
        bool ok = false;
        std::vector<double> out{summarize(sybench::time_exchanges(line.theirs, c.exchanges, ok)).median / 1e6};
        if (!ok) throw std::runtime_error("MPI_Alltoallv exchange: a byte was wrong (see stderr)");
        const std::vector<double> stamps = line.mine->run(c.exchanges);
        out.insert(out.end(), stamps.begin(), stamps.end());
        return out;
      });
      const double s = median_span(std::span(v).subspan(1));
      state.SetIterationTime(s);
      figure += s;
      mpi += v[0];
    }
    inquiries = line.mine->inquiries_per_exchange();
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double batches = static_cast<double>(state.iterations());
  state.counters["mpi_us"] = mpi / batches * 1e6;
  state.counters["ratio_to_mpi"] = figure / mpi;
  if (phases > 0) state.counters["phases"] = phases;
  if (inquiries > 0) state.counters["inquiries"] = inquiries;
}

// ---------------------------------------------------------------- collectives

enum class CollectiveOp { barrier, broadcast, allreduce, allgather };
constexpr int kCollectivesPerChunk = 20;
constexpr Rank kCollectiveProcessesPerNode = 4;

const char* collective_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::barrier:
      return "barrier";
    case CollectiveOp::broadcast:
      return "broadcast";
    case CollectiveOp::allreduce:
      return "allreduce";
    default:
      return "allgather";
  }
}

// A collective line's inputs and the result every process must get, alike on
// every node: rank r's `bytes` bytes (an allgather's input, or B/8 int64 to
// sum), rank 0's for a broadcast. Ranks are in blocks over the nodes, so node
// k's share (what its one MPI rank passes to MPI) is its ranks' inputs back to
// back, or their sum.
struct CollectiveData {
  CollectiveData(CollectiveOp op, std::size_t bytes, Rank n, int node_count) : op(op) {
    inputs.resize(n);
    values.resize(n);
    for (Rank r = 0; r < n; ++r) {
      inputs[r].resize(bytes);
      for (std::size_t i = 0; i < bytes; ++i) inputs[r][i] = static_cast<std::byte>(r * 131 + i * 7 + 1);
      for (std::size_t i = 0; i < bytes / 8; ++i) values[r].push_back(static_cast<std::int64_t>(r * 1'000'003 + i));
    }
    sum.assign(bytes / 8, 0);
    for (Rank r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[r][i];
      gathered.insert(gathered.end(), inputs[r].begin(), inputs[r].end());
    }
    const Rank per = n / static_cast<Rank>(node_count);
    const Rank first = per * static_cast<Rank>(node());
    node_sum.assign(sum.size(), 0);
    for (Rank r = first; r < first + per; ++r) {
      for (std::size_t i = 0; i < sum.size(); ++i) node_sum[i] += values[r][i];
      node_inputs.insert(node_inputs.end(), inputs[r].begin(), inputs[r].end());
    }
  }
  CollectiveOp op;
  std::vector<std::vector<std::byte>> inputs;
  std::vector<std::vector<std::int64_t>> values;
  std::vector<std::int64_t> sum, node_sum;
  std::vector<std::byte> gathered, node_inputs;
};

// Byte for byte with memcmp (vector<std::byte>'s == compares a byte at a time).
bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

[[noreturn]] void wrong_collective(CollectiveOp op, const char* who) {
  throw std::runtime_error(std::string(who) + " " + collective_name(op) + ": a wrong result");
}

// Seconds per collective of `data.op` over every process of a job of
// kCollectiveProcessesPerNode processes a node, on the node hosting rank 0
// (0 elsewhere). Every result is checked byte for byte on every process.
double switchyard_collective(const CollectiveData& d) {
  sybench::ChunkTimer timer(kCollectivesPerChunk);
  const RunOptions options = sybench::default_placement();
  const Rank n = static_cast<Rank>(d.inputs.size());
  node_runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        const Rank me = p.rank();
        co_await p.barrier();
        if (me == 0) timer.start();
        for (int i = 0; i < sybench::kChunks * kCollectivesPerChunk; ++i) {
          if (d.op == CollectiveOp::barrier) {
            co_await p.barrier();
          } else if (d.op == CollectiveOp::broadcast) {
            const auto mine = me == 0 ? std::span<const std::byte>(d.inputs[0]) : std::span<const std::byte>{};
            if (!same_bytes(co_await p.broadcast(0, mine), d.inputs[0])) wrong_collective(d.op, "switchyard");
          } else if (d.op == CollectiveOp::allreduce) {
            if (co_await p.allreduce(d.values[me]) != d.sum) wrong_collective(d.op, "switchyard");
          } else if (!same_bytes(co_await p.allgather(d.inputs[me]), d.gathered)) {
            wrong_collective(d.op, "switchyard");
          }
          if (me == 0 && (i + 1) % kCollectivesPerChunk == 0) timer.lap();
        }
      },
      options);
  return timer.per_op();
}

// The same collectives by MPI with one rank per node, on the nodes' shares;
// seconds per collective on node 0 (0 elsewhere).
double mpi_collective(const CollectiveData& d) {
  std::vector<std::byte> bytes(d.op == CollectiveOp::allgather ? d.gathered.size() : d.inputs[0].size());
  std::vector<std::int64_t> sum(d.sum.size());
  const auto check = [&] {
    if ((d.op == CollectiveOp::broadcast && !same_bytes(bytes, d.inputs[0])) ||
        (d.op == CollectiveOp::allreduce && sum != d.sum) ||
        (d.op == CollectiveOp::allgather && !same_bytes(bytes, d.gathered))) {
      wrong_collective(d.op, "MPI");
    }
  };
  const auto once = [&] {
    if (d.op == CollectiveOp::barrier) {
      MPI_Barrier(MPI_COMM_WORLD);
    } else if (d.op == CollectiveOp::broadcast) {
      if (node() == 0) bytes = d.inputs[0];
      MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
    } else if (d.op == CollectiveOp::allreduce) {
      MPI_Allreduce(d.node_sum.data(), sum.data(), static_cast<int>(sum.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    } else {
      const int each = static_cast<int>(d.node_inputs.size());
      MPI_Allgather(d.node_inputs.data(), each, MPI_BYTE, bytes.data(), each, MPI_BYTE, MPI_COMM_WORLD);
    }
    check();
  };
  once();  // untimed
  sybench::ChunkTimer timer(kCollectivesPerChunk);
  timer.start();
  for (int i = 0; i < sybench::kChunks * kCollectivesPerChunk; ++i) {
    once();
    if ((i + 1) % kCollectivesPerChunk == 0) timer.lap();
  }
  return node() == 0 ? timer.per_op() : 0;
}

void BM_Collective(benchmark::State& state, CollectiveOp op) {
  if (skip_unless_two_nodes(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  double figure = 0, mpi = 0;
  try {
    const CollectiveData d(op, bytes, kCollectiveProcessesPerNode * static_cast<Rank>(nodes()), nodes());
    for (auto _ : state) {
      const auto [m, s] = agreed<2>([&] { return std::array{mpi_collective(d), switchyard_collective(d)}; });
      state.SetIterationTime(s);
      figure += s;
      mpi += m;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double batches = static_cast<double>(state.iterations());
  state.counters["mpi_us"] = mpi / batches * 1e6;
  state.counters["ratio_to_mpi"] = figure / mpi;
}

// ---------------------------------------------------------------- busy lock

enum class LockMethod { rma, am, switchyard, rma_in_runtime };
enum LockOp : std::int64_t { kAcquire = 1, kRelease = 2, kDone = 3 };
constexpr int kOwner = 1;
constexpr int kRequestTag = 7, kReplyTag = 8;

// Node 1's worker loop: polls a posted MPI_Irecv with MPI_Test, serves
// acquire (test-and-set of `lock`: reply 1 if it was free, 0 if busy) and
// release requests, until every other node has said it is done. A release
// from a node that does not hold the lock is counted, and thrown once the loop
// is over (throwing at once would leave the others waiting for replies).
void serve_lock(std::int64_t& lock) {
  int done = 0, holder = -1;
  std::uint64_t wrong_releases = 0;
  std::int64_t request = 0;
  MPI_Request pending;
  MPI_Irecv(&request, 1, MPI_INT64_T, MPI_ANY_SOURCE, kRequestTag, MPI_COMM_WORLD, &pending);
  while (done < nodes() - 1) {
    int arrived = 0;
    MPI_Status status;
    MPI_Test(&pending, &arrived, &status);
    if (!arrived) continue;
    if (request == kAcquire) {
      const std::int64_t granted = lock == 0 ? 1 : 0;
      if (granted) holder = status.MPI_SOURCE;
      lock = 1;
      MPI_Send(&granted, 1, MPI_INT64_T, status.MPI_SOURCE, kReplyTag, MPI_COMM_WORLD);
    } else if (request == kRelease) {
      wrong_releases += holder != status.MPI_SOURCE;
      holder = -1;
      lock = 0;
    } else {
      ++done;
    }
    if (done < nodes() - 1) MPI_Irecv(&request, 1, MPI_INT64_T, MPI_ANY_SOURCE, kRequestTag, MPI_COMM_WORLD, &pending);
  }
  if (wrong_releases > 0) {
    throw std::runtime_error("busy lock: " + std::to_string(wrong_releases) +
                             " releases by a node that did not hold it");
  }
}

// Acquires the lock on node 1; returns the attempts it took.
std::uint64_t acquire(LockMethod method, MPI_Win win) {
  for (std::uint64_t attempts = 1;; ++attempts) {
    std::int64_t was = 1;
    if (method == LockMethod::rma) {
      const std::int64_t one = 1, zero = 0;
      MPI_Compare_and_swap(&one, &zero, &was, MPI_INT64_T, kOwner, 0, win);
      MPI_Win_flush(kOwner, win);
    } else {
      const std::int64_t op = kAcquire;
      std::int64_t granted = 0;
      MPI_Send(&op, 1, MPI_INT64_T, kOwner, kRequestTag, MPI_COMM_WORLD);
      MPI_Recv(&granted, 1, MPI_INT64_T, kOwner, kReplyTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      was = granted ? 0 : 1;
    }
    if (was == 0) return attempts;
  }
}

void release(LockMethod method, MPI_Win win) {
  const std::int64_t zero = 0, op = kRelease;
  if (method == LockMethod::rma) {
    MPI_Accumulate(&zero, 1, MPI_INT64_T, kOwner, 0, 1, MPI_INT64_T, MPI_REPLACE, win);
    MPI_Win_flush(kOwner, win);
  } else {
    MPI_Send(&op, 1, MPI_INT64_T, kOwner, kRequestTag, MPI_COMM_WORLD);
  }
}

// One batch: seconds per acquire + release and attempts per acquire on node 0
// (0 elsewhere). Every node but the owner acquires and releases. rma: after
// the batch the owner checks that the lock word is 0 (every acquire was
// released, none twice over another's); am: see serve_lock.
std::array<double, 2> lock_batch(LockMethod method, MPI_Win win, std::int64_t& lock) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (node() == kOwner) {
    serve_lock(lock);
    if (method == LockMethod::rma) {
      MPI_Win_sync(win);  // the requesters' accumulates are complete (flushed before their "done")
      if (lock != 0) {
        throw std::runtime_error("busy lock (rma): the lock word is " + std::to_string(lock) +
                                 " after the batch, not 0");
      }
    }
    return {0, 0};
  }
  sybench::ChunkTimer timer(kLockPairsPerChunk);
  std::uint64_t attempts = 0;
  timer.start();
  for (int c = 0; c < sybench::kChunks; ++c) {
    for (int i = 0; i < kLockPairsPerChunk; ++i) {
      attempts += acquire(method, win);
      release(method, win);
    }
    timer.lap();
  }
  const std::int64_t done = kDone;
  MPI_Send(&done, 1, MPI_INT64_T, kOwner, kRequestTag, MPI_COMM_WORLD);
  if (node() != 0) return {0, 0};
  return {timer.per_op(), static_cast<double>(attempts) / (sybench::kChunks * kLockPairsPerChunk)};
}

// The BM_BusyLock lines that run in a switchyard job, one process per node:
// rank 0 (node 0) times kChunks chunks of kLockPairsPerChunk calls of
// `take_and_give_back` (a Task<std::uint64_t>(Process&) that acquires and
// releases the lock of the process on node 1 and returns its tries), the
// processes of nodes 2.. call it until rank 0 is done, and node 1's process
// only waits (its core serves requests meanwhile). Returns seconds per pair
// and tries per acquire on node 0 (0 elsewhere).
template <class Pair>
std::array<double, 2> lock_job(Pair take_and_give_back) {
  constexpr Tag kDoneTag = 1;
  const auto n = static_cast<Rank>(nodes());
  sybench::ChunkTimer timer(kLockPairsPerChunk);
  std::uint64_t tries = 0;
  node_runtime().run(
      n,
      [&](Process& p) -> Task<void> {
        co_await p.barrier();
        if (p.rank() == 1) {
          co_await p.recv(0, kDoneTag);
        } else if (p.rank() == 0) {
          timer.start();
          for (int c = 0; c < sybench::kChunks; ++c) {
            for (int i = 0; i < kLockPairsPerChunk; ++i) tries += co_await take_and_give_back(p);
            timer.lap();
          }
          for (Rank r = 1; r < n; ++r) co_await p.send(r, {}, kDoneTag);
        } else {
          RecvTicket done = p.post_recv(0, kDoneTag);
          while (!p.test(done)) {
            co_await take_and_give_back(p);
            co_await p.yield();  // lets the worker poll, and take in `done`
          }
        }
      },
      sybench::default_placement());
  if (node() != 0) return {0, 0};
  return {timer.per_op(), static_cast<double>(tries) / (sybench::kChunks * kLockPairsPerChunk)};
}

// BM_BusyLock/switchyard: the runtime's lock of rank 1, asked for from node 0.
std::array<double, 2> switchyard_lock_batch() {
  return lock_job([](Process& p) -> Task<std::uint64_t> {
    std::uint64_t tries = 0;
    for (bool granted = false; !granted; ++tries) granted = co_await p.try_busy_lock(1);
    p.release_busy_lock(1);
    co_return tries;
  });
}

// BM_BusyLock/rma_in_runtime: rma's acquire and release, called by the
// processes of a switchyard job from their worker threads while the MPI
// transport runs beside them. After the job, node 1 checks that the lock
// word is 0 again.
std::array<double, 2> rma_in_runtime_batch(MPI_Win win, const std::int64_t& word) {
  const std::array<double, 2> figures = lock_job([win](Process&) -> Task<std::uint64_t> {
    const std::uint64_t tries = acquire(LockMethod::rma, win);
    release(LockMethod::rma, win);
    co_return tries;
  });
  MPI_Barrier(MPI_COMM_WORLD);  // every release was flushed before its process finished
  if (node() == kOwner) {
    MPI_Win_sync(win);
    if (word != 0) throw std::runtime_error("busy lock (rma_in_runtime): the lock word is " + std::to_string(word));
  }
  return figures;
}

void BM_BusyLock(benchmark::State& state, LockMethod method) {
  if (skip_unless_two_nodes(state)) return;
  std::int64_t* word = nullptr;
  MPI_Win win;
  MPI_Win_allocate(sizeof(std::int64_t), sizeof(std::int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &word, &win);
  *word = 0;
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Barrier(MPI_COMM_WORLD);
  double attempts = 0;
  try {
    for (auto _ : state) {
      const auto [seconds, tries] = agreed<2>([&] {
        switch (method) {
          case LockMethod::switchyard:
            return switchyard_lock_batch();
          case LockMethod::rma_in_runtime:
            return rma_in_runtime_batch(win, *word);
          default:
            return lock_batch(method, win, *word);
        }
      });
      state.SetIterationTime(seconds);
      attempts += tries;
    }
  } catch (const std::exception& e) {
    sybench::fail(state, e);
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  state.counters["attempts"] = attempts / static_cast<double>(state.iterations());
  state.counters["contenders"] = nodes() - 1;
}

const int registered = [] {
  for (std::int64_t bytes : {8, 64, 512, 1024, 4096}) {
    benchmark::RegisterBenchmark("BM_OneWay", BM_OneWay)->Apply(sybench::mpi::mpi_line)->ArgName("bytes")->Arg(bytes);
  }
  benchmark::RegisterBenchmark("BM_OneWayAfterIdle", BM_OneWayAfterIdle)
      ->Apply(sybench::mpi::mpi_line)
      ->ArgName("gap_us")
      ->Arg(2000);
  for (std::int64_t bytes : {64 << 10, 256 << 10, 1 << 20, 4 << 20}) {
    benchmark::RegisterBenchmark("BM_Bandwidth", BM_Bandwidth)
        ->Apply(sybench::mpi::mpi_line)
        ->ArgName("bytes")
        ->Arg(bytes);
  }
  for (const ExchangeConfig& c : exchange_configs()) {
    for (const std::string& name : default_exchange_schedulers()) {
      const std::string line = "BM_Exchange/n:" + std::to_string(c.n) + "/d:" + std::to_string(c.d) +
                               "/bytes:" + std::to_string(c.bytes) + "/" + name;
      benchmark::RegisterBenchmark(line.c_str(), BM_Exchange, c, name)
          ->Apply(sybench::mpi::mpi_line)
          ->Iterations(c.batches);
    }
  }
  benchmark::RegisterBenchmark("BM_Collective/barrier", BM_Collective, CollectiveOp::barrier)
      ->Apply(sybench::mpi::mpi_line)
      ->ArgName("bytes")
      ->Arg(0);
  for (CollectiveOp op : {CollectiveOp::broadcast, CollectiveOp::allreduce, CollectiveOp::allgather}) {
    const std::string line = std::string("BM_Collective/") + collective_name(op);
    benchmark::RegisterBenchmark(line.c_str(), BM_Collective, op)
        ->Apply(sybench::mpi::mpi_line)
        ->ArgName("bytes")
        ->Arg(8)
        ->Arg(1024)
        ->Arg(64 << 10);
  }
  for (const auto& [name, method] : {std::pair{"BM_BusyLock/rma", LockMethod::rma},
                                     {"BM_BusyLock/am", LockMethod::am},
                                     {"BM_BusyLock/switchyard", LockMethod::switchyard},
                                     {"BM_BusyLock/rma_in_runtime", LockMethod::rma_in_runtime}}) {
    benchmark::RegisterBenchmark(name, BM_BusyLock, method)->Apply(sybench::mpi::mpi_line);
  }
  return 0;
}();

}  // namespace

int main(int argc, char** argv) {
  // Open MPI 4.1 (Debian 12's 4.1.4 included) picks osc/rdma for MPI_Win_allocate
  // on one machine, and its atomics over btl/vader's single copy crash the
  // target in vader's progress (open-mpi/ompi#11349; BM_BusyLock/rma hits it).
  // Unless the user chose the one-sided component (OMPI_MCA_osc, or
  // `--mca osc ...`, which mpirun passes the same way), leave osc/rdma out:
  // osc/sm then serves windows within a machine, osc/ucx across machines.
  setenv("OMPI_MCA_osc", "^rdma", 0);
  return sybench::mpi::main(argc, argv,
                            "nodes: Time = one-way message, message, exchange, or lock acquire + release, switchyard "
                            "across MPI ranks beside Open MPI");
}
