// The MPI baseline of BM_Exchange (bench_exchange.cpp): the same all-to-many
// exchange done the usual MPI way, with Open MPI, one MPI rank per core.
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core --map-by core
//          bench_exchange_mpi N D BYTES REPETITIONS SEED
//
// The exchange: N switchyard processes, Ranka-Wang-Fox Fig. 7 matrix with D
// messages of BYTES bytes per process (fig7_matrix(N, D, BYTES, SEED)), the
// payloads of payload.hpp seeded with SEED. MPI rank k owns the processes r
// with r % ranks == k: with 2 ranks, rank k on core k owns what
// sybench::round_robin() places on core k. Each rank keeps one ExchangeBuffers
// per process it owns (send buffers filled, receive buffers poisoned: the
// buffers run_exchange uses), built on its own core.
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
// same on both cores. After each repetition, outside the clock, every rank
// checks every byte of every message its processes received.
//
// Prints one JSON line on stdout from rank 0:
//   {"program":"bench_exchange_mpi","ranks":2,"n":32,"d":8,"bytes":1024,
//    "repetitions":20,"seed":1,"median_us":...,"min_us":...,"max_us":...}
// Exit status: 0, 1 if a byte was wrong (the message says which), 2 on bad
// arguments.

#include <mpi.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <switchyard/schedulers/payload.hpp>
#include <vector>

using switchyard::Rank;
using namespace switchyard::schedulers;

namespace {

struct Args {
  Rank n = 0, d = 0;
  std::uint64_t bytes = 0;
  std::uint32_t repetitions = 0;
  std::uint64_t seed = 0;
};

template <class T>
bool parse_number(const char* text, T& out) {
  const char* end = text + std::strlen(text);
  const auto [at, error] = std::from_chars(text, end, out);
  return error == std::errc() && at == end && at != text;
}

// The arguments, or what is wrong with them. `ranks` bounds the message volume
// of one rank, which MPI_Alltoallv counts in int.
std::optional<Args> parse_args(int argc, char** argv, int ranks, std::string& error) {
  if (argc != 6) {
    error = "expected 5 arguments, got " + std::to_string(argc - 1);
    return std::nullopt;
  }
  Args a;
  const char* names[] = {"N (processes)", "D (messages per process)", "BYTES (per message)", "REPETITIONS", "SEED"};
  const bool parsed[] = {parse_number(argv[1], a.n), parse_number(argv[2], a.d), parse_number(argv[3], a.bytes),
                         parse_number(argv[4], a.repetitions), parse_number(argv[5], a.seed)};
  for (int i = 0; i < 5; ++i) {
    if (!parsed[i]) {
      error = std::string(names[i]) + " must be a non-negative whole number that fits, not '" + argv[i + 1] + "'";
      return std::nullopt;
    }
  }
  const std::uint64_t per_rank = (std::uint64_t{a.n} + ranks - 1) / ranks;  // processes a rank owns, at most
  if (a.n < 2 || a.n > kMaxMatrixProcesses) {
    error = "N must be between 2 and " + std::to_string(kMaxMatrixProcesses) + ", not " + std::to_string(a.n);
  } else if (a.d < 1 || a.d >= a.n) {
    error = "D must be between 1 and N - 1 = " + std::to_string(a.n - 1) + ", not " + std::to_string(a.d);
  } else if (a.bytes < 1 || a.bytes > INT_MAX / a.d / per_rank) {
    error = "BYTES must be between 1 and " + std::to_string(INT_MAX / a.d / per_rank) +
            " (a rank's messages must fit MPI_Alltoallv's int counts), not " + std::to_string(a.bytes);
  } else if (a.repetitions < 1) {
    error = "REPETITIONS must be at least 1";
  } else {
    return a;
  }
  return std::nullopt;
}

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

RankExchange plan_exchange(const CommMatrix& m, std::uint64_t seed, int me, int ranks) {
  const Rank n = m.size();
  RankExchange x;
  x.buffers.resize(n);
  for (Rank r = static_cast<Rank>(me); r < n; r += static_cast<Rank>(ranks)) {
    x.buffers[r] = std::make_unique<ExchangeBuffers>(m, r, seed);
  }
  x.send_counts.assign(ranks, 0);
  x.recv_counts.assign(ranks, 0);
  for (Rank src = 0; src < n; ++src) {
    for (const MatrixEntry& e : m.row(src)) {
      if (static_cast<int>(src % ranks) == me) x.send_counts[e.peer % ranks] += static_cast<int>(e.bytes);
      if (static_cast<int>(e.peer % ranks) == me) x.recv_counts[src % ranks] += static_cast<int>(e.bytes);
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
    const int from_rank = static_cast<int>(src % ranks);
    for (const MatrixEntry& e : m.row(src)) {
      const int to_rank = static_cast<int>(e.peer % ranks);
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

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Microseconds per repetition; false in `ok` if any rank received a wrong byte.
std::vector<double> time_exchanges(RankExchange& x, std::uint32_t repetitions, bool& ok) {
  std::vector<double> us;
  ok = true;
  for (std::uint32_t rep = 0; rep < repetitions && ok; ++rep) {
    for (auto& b : x.buffers) {
      if (b) b->poison();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now_ns();
    for (const Copy& c : x.pack) std::memcpy(c.to, c.from, c.bytes);
    MPI_Alltoallv(x.packed.data(), x.send_counts.data(), x.send_displs.data(), MPI_BYTE, x.unpacked.data(),
                  x.recv_counts.data(), x.recv_displs.data(), MPI_BYTE, MPI_COMM_WORLD);
    for (const Copy& c : x.unpack) std::memcpy(c.to, c.from, c.bytes);
    double span[2] = {-start, now_ns()};  // MPI_MAX of both: the earliest start and the latest end
    int wrong = 0;
    for (const auto& b : x.buffers) {
      if (!b) continue;
      if (const auto bad = b->verify()) {
        std::fprintf(stderr, "bench_exchange_mpi: repetition %u: %s\n", rep + 1, bad->describe().c_str());
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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::string error;
  const std::optional<Args> args = parse_args(argc, argv, ranks, error);
  if (!args) {
    if (me == 0) {
      std::fprintf(stderr,
                   "bench_exchange_mpi: %s\nusage: mpirun -np 2 --bind-to core --map-by core bench_exchange_mpi "
                   "N D BYTES REPETITIONS SEED\n",
                   error.c_str());
    }
    MPI_Finalize();
    return 2;
  }
  const CommMatrix m = fig7_matrix(args->n, args->d, args->bytes, args->seed);
  RankExchange x = plan_exchange(m, args->seed, me, ranks);
  bool ok = false;
  const TimeStats t = summarize(time_exchanges(x, args->repetitions, ok));
  if (ok && me == 0) {
    std::printf(
        "{\"program\":\"bench_exchange_mpi\",\"ranks\":%d,\"n\":%u,\"d\":%u,\"bytes\":%llu,\"repetitions\":%u,"
        "\"seed\":%llu,\"median_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f}\n",
        ranks, args->n, args->d, static_cast<unsigned long long>(args->bytes), args->repetitions,
        static_cast<unsigned long long>(args->seed), t.median, t.min, t.max);
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
