#pragma once
// The MPI baseline of an all-to-many exchange: pack, one MPI_Alltoallv, unpack.
// Each MPI rank of MPI_COMM_WORLD owns some of the exchange's processes and
// keeps one ExchangeBuffers per process it owns (send buffers filled, receive
// buffers poisoned: the buffers run_exchange uses), built on its own core.
// bench_exchange_mpi (one MPI rank per core, processes round robin) and
// bench_nodes (one MPI rank per node, processes in blocks) both run it.
//
// One repetition: poison the receive buffers, MPI_Barrier, then, on the clock,
// pack every message the rank's processes send into one buffer grouped by
// destination rank (memcpy, processes and destinations in ascending order), one
// MPI_Alltoallv of bytes, unpack every message into its receive buffer. Counts,
// displacements and the list of copies are computed once, before the first
// repetition. Time of a repetition = latest end minus earliest start over the
// ranks (steady_clock, read by each rank as it leaves the barrier and when it has
// unpacked its last message; MPI_Allreduce with MPI_MAX, outside the clock).
// That is the definition of the switchyard figure (first process out of the
// barrier to the last one done), and, unlike timing on rank 0 between two
// barriers, it leaves out a barrier's own latency, which is of the order of the
// 16-byte exchange itself. steady_clock is the machine's CLOCK_MONOTONIC, the
// same on every core (and so only meaningful with every rank on one machine).
// After each repetition, outside the clock, every rank checks every byte of
// every message its processes received. Or, as bench_exchange's loop lines
// time theirs, loops of exchanges on fresh payloads (time_exchange_loops).

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <vector>

#include "fresh_payloads.hpp"

namespace sybench {

using switchyard::Rank;
using switchyard::schedulers::CommMatrix;
using switchyard::schedulers::ExchangeBuffers;
using switchyard::schedulers::MatrixEntry;

struct Copy {
  const std::byte* from;
  std::byte* to;
  std::size_t bytes;
};

// What one rank does in a repetition, worked out once: its processes'
// buffers, the packing and unpacking copies, and MPI_Alltoallv's arguments.
struct RankExchange {
  std::vector<std::unique_ptr<ExchangeBuffers>> buffers;  // of the processes it owns, else null
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  std::vector<std::byte> packed, unpacked;  // zero-filled: their pages are touched before the clock
  std::vector<Copy> pack, unpack;
};

// owner[r] is the MPI rank (of MPI_COMM_WORLD, whose size is `ranks`) that
// owns process r: it keeps r's buffers and sends and receives r's messages.
inline RankExchange plan_exchange(const CommMatrix& m, std::uint64_t seed, int me, int ranks,
                                  const std::vector<int>& owner) {
  const Rank n = m.size();
  RankExchange x;
  x.buffers.resize(n);
  for (Rank r = 0; r < n; ++r) {
    if (owner[r] == me) x.buffers[r] = std::make_unique<ExchangeBuffers>(m, r, seed);
  }
  x.send_counts.assign(ranks, 0);
  x.recv_counts.assign(ranks, 0);
  for (Rank src = 0; src < n; ++src) {
    for (const MatrixEntry& e : m.row(src)) {
      if (owner[src] == me) x.send_counts[owner[e.peer]] += static_cast<int>(e.bytes);
      if (owner[e.peer] == me) x.recv_counts[owner[src]] += static_cast<int>(e.bytes);
    }
  }
  auto displacements = [](const std::vector<int>& counts) {
    std::vector<int> at(counts.size(), 0);
    for (std::size_t k = 1; k < counts.size(); ++k) at[k] = at[k - 1] + counts[k - 1];
    return at;
  };
  x.send_displs = displacements(x.send_counts);
  x.recv_displs = displacements(x.recv_counts);
  x.packed.resize(static_cast<std::size_t>(x.send_displs.back() + x.send_counts.back()));
  x.unpacked.resize(static_cast<std::size_t>(x.recv_displs.back() + x.recv_counts.back()));
  // Both ends walk the messages in the same order (source, then destination),
  // so the receiver knows where in the sender's block each message lies.
  std::vector<int> send_at = x.send_displs, recv_at = x.recv_displs;
  for (Rank src = 0; src < n; ++src) {
    const int from_rank = owner[src];
    for (const MatrixEntry& e : m.row(src)) {
      const int to_rank = owner[e.peer];
      const auto bytes = static_cast<std::size_t>(e.bytes);
      if (from_rank == me) {
        const ExchangeBuffers& b = *x.buffers[src];
        x.pack.push_back({b.send_buffer(*b.send_index(e.peer)).data(), x.packed.data() + send_at[to_rank], bytes});
        send_at[to_rank] += static_cast<int>(bytes);
      }
      if (to_rank == me) {
        ExchangeBuffers& b = *x.buffers[e.peer];
        x.unpack.push_back({x.unpacked.data() + recv_at[from_rank], b.recv_buffer(*b.recv_index(src)).data(), bytes});
        recv_at[from_rank] += static_cast<int>(bytes);
      }
    }
  }
  // Pack destination by destination, unpack source rank by source rank: each
  // walks its staging buffer once, front to back.
  std::sort(x.pack.begin(), x.pack.end(), [](const Copy& a, const Copy& b) { return a.to < b.to; });
  std::sort(x.unpack.begin(), x.unpack.end(), [](const Copy& a, const Copy& b) { return a.from < b.from; });
  return x;
}

inline double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// One exchange, as both timings below run it: pack, MPI_Alltoallv, unpack.
inline void exchange_once(RankExchange& x) {
  for (const Copy& c : x.pack) std::memcpy(c.to, c.from, c.bytes);
  MPI_Alltoallv(x.packed.data(), x.send_counts.data(), x.send_displs.data(), MPI_BYTE, x.unpacked.data(),
                x.recv_counts.data(), x.recv_displs.data(), MPI_BYTE, MPI_COMM_WORLD);
  for (const Copy& c : x.unpack) std::memcpy(c.to, c.from, c.bytes);
}

// Microseconds per repetition; false in `ok` if any rank received a wrong byte.
inline std::vector<double> time_exchanges(RankExchange& x, std::uint32_t repetitions, bool& ok) {
  std::vector<double> us;
  ok = true;
  for (std::uint32_t rep = 0; rep < repetitions && ok; ++rep) {
    for (auto& b : x.buffers) {
      if (b) b->poison();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now_ns();
    exchange_once(x);
    double span[2] = {-start, now_ns()};  // MPI_MAX of both: the earliest start and the latest end
    int wrong = 0;
    for (const auto& b : x.buffers) {
      if (!b) continue;
      if (const auto bad = b->verify()) {
        std::fprintf(stderr, "MPI_Alltoallv exchange: repetition %u: %s\n", rep + 1, bad->describe().c_str());
        wrong = 1;
        break;
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, span, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ok = wrong == 0;
    us.push_back((span[1] + span[0]) / 1e3);
  }
  return us;
}

// Microseconds per exchange in each of `loops` loops of `runs` exchanges back
// to back, as bench_exchange's loop lines run them (BM_ExchangeLoop): an
// MPI_Barrier before each loop and none inside it; before each exchange the
// rank stamps its processes' payloads with the exchange's number, and after it
// checks every byte they received (fresh_payloads.hpp), on the clock, as the
// loop lines do. A loop's time = its latest end minus its earliest start over
// the ranks, over `runs`. False in `ok` if any rank received a wrong byte.
inline std::vector<double> time_exchange_loops(RankExchange& x, std::uint32_t loops, std::uint32_t runs, bool& ok) {
  std::vector<FreshPayloads> payloads;
  for (auto& b : x.buffers) {
    if (b) payloads.emplace_back(*b);
  }
  std::vector<double> us;
  std::uint64_t exchange = 0;
  int wrong = 0;
  for (std::uint32_t loop = 0; loop < loops && wrong == 0; ++loop) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now_ns();
    for (std::uint32_t k = 0; k < runs; ++k) {
      ++exchange;
      for (FreshPayloads& p : payloads) p.stamp(exchange);
      exchange_once(x);
      for (const FreshPayloads& p : payloads) {
        if (const auto bad = p.check(exchange)) [[unlikely]] {
          if (wrong == 0)
            std::fprintf(stderr, "MPI_Alltoallv loop: exchange %llu: %s\n", static_cast<unsigned long long>(exchange),
                         bad->describe().c_str());
          wrong = 1;
        }
      }
    }
    double span[2] = {-start, now_ns()};  // MPI_MAX of both: the earliest start and the latest end
    MPI_Allreduce(MPI_IN_PLACE, span, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    us.push_back((span[1] + span[0]) / 1e3 / runs);
  }
  ok = wrong == 0;
  return us;
}

}  // namespace sybench
