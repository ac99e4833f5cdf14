// The MPI baseline of BM_Exchange (bench_exchange.cpp): the same all-to-many
// exchange done the usual MPI way, with Open MPI, one MPI rank per core.
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core --map-by core
//          bench_exchange_mpi N D BYTES REPETITIONS SEED [RUNS]
//
// The exchange: N switchyard processes, Ranka-Wang-Fox Fig. 7 matrix with D
// messages of BYTES bytes per process (fig7_matrix(N, D, BYTES, SEED)), the
// payloads of payload.hpp seeded with SEED. MPI rank k owns the processes r
// with r % ranks == k: with 2 ranks, rank k on core k owns what
// sybench::round_robin() places on core k. The exchange and its timing:
// mpi_alltoallv_exchange.hpp. With RUNS, each repetition is a loop of RUNS
// exchanges back to back on fresh payloads, stamped before and checked after
// each exchange on the clock (bench_exchange's BM_ExchangeLoop), and its time
// is one exchange's: the loop's over RUNS.
//
// Prints one JSON line on stdout from rank 0:
//   {"program":"bench_exchange_mpi","ranks":2,"n":32,"d":8,"bytes":1024,
//    "repetitions":20,"seed":1,"runs":0,"median_us":...,"min_us":...,"max_us":...}
// (runs: 0 without RUNS).
// Exit status: 0, 1 if a byte was wrong (the message says which), 2 on bad
// arguments.

#include <mpi.h>

#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <switchyard/schedulers/comm_matrix.hpp>
#include <switchyard/schedulers/exchange.hpp>
#include <vector>

#include "mpi_alltoallv_exchange.hpp"

using switchyard::Rank;
using namespace switchyard::schedulers;

namespace {

struct Args {
  Rank n = 0, d = 0;
  std::uint64_t bytes = 0;
  std::uint32_t repetitions = 0;
  std::uint64_t seed = 0;
  std::uint32_t runs = 0;  // exchanges per repetition's loop; 0: one exchange, after a barrier
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
  if (argc != 6 && argc != 7) {
    error = "expected 5 or 6 arguments, got " + std::to_string(argc - 1);
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
  } else if (argc == 7 && (!parse_number(argv[6], a.runs) || a.runs < 1)) {
    error = std::string("RUNS must be a whole number of at least 1 that fits, not '") + argv[6] + "'";
  } else if (argc == 7 && a.bytes % 8 != 0) {
    error = "with RUNS, BYTES must be a multiple of 8 (fresh payloads are stamped word by word), not " +
            std::to_string(a.bytes);
  } else {
    return a;
  }
  return std::nullopt;
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
                   "N D BYTES REPETITIONS SEED [RUNS]\n",
                   error.c_str());
    }
    MPI_Finalize();
    return 2;
  }
  const CommMatrix m = fig7_matrix(args->n, args->d, args->bytes, args->seed);
  std::vector<int> owner(args->n);
  for (Rank r = 0; r < args->n; ++r) owner[r] = static_cast<int>(r % static_cast<Rank>(ranks));
  sybench::RankExchange x = sybench::plan_exchange(m, args->seed, me, ranks, owner);
  bool ok = false;
  const TimeStats t = summarize(args->runs > 0 ? sybench::time_exchange_loops(x, args->repetitions, args->runs, ok)
                                               : sybench::time_exchanges(x, args->repetitions, ok));
  if (ok && me == 0) {
    std::printf(
        "{\"program\":\"bench_exchange_mpi\",\"ranks\":%d,\"n\":%u,\"d\":%u,\"bytes\":%llu,\"repetitions\":%u,"
        "\"seed\":%llu,\"runs\":%u,\"median_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f}\n",
        ranks, args->n, args->d, static_cast<unsigned long long>(args->bytes), args->repetitions,
        static_cast<unsigned long long>(args->seed), args->runs, t.median, t.min, t.max);
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
