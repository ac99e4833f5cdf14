// The Open MPI baselines of bench_latency's cross-core lines: a plain MPI
// program of 2 ranks, one per core.
//
//   mpirun --allow-run-as-root -np 2 --bind-to core --map-by core latency_mpi MODE REPETITIONS
//
//   pingpong  ranks 0 and 1 ping-pong an 8-byte message (MPI_Send, MPI_Recv);
//             an operation is one way (a round trip / 2). Rank 1 answers 2i
//             with 2i + 1; both check what they receive.
//   burst     rank 0 posts 64 MPI_Isend of 8 bytes and MPI_Waitall; rank 1,
//             its 64 receives posted (MPI_Irecv, MPI_Waitall), checks each
//             and answers with one 8-byte ack that rank 0 receives before the
//             next burst; an operation is one message (a burst / 64).
//
// As bench_latency times its own lines (bench_common.hpp's ChunkTimer): each
// repetition is kChunks chunks timed by rank 0, a repetition's figure is its
// median chunk per operation. Prints one JSON line on rank 0:
//   {"mode": ..., "median_us": <median over the repetitions, us per operation>}
// and exits 1 (after MPI_Abort) on a wrong payload.

#include <mpi.h>
#include <switchyard/median.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kChunks = 20;
constexpr int kRoundTripsPerChunk = 250;
constexpr int kBurstsPerChunk = 50;
constexpr int kBurstMessages = 64;

void expect(std::uint64_t got, std::uint64_t expected, const char* what) {
  if (got == expected) return;
  std::fprintf(stderr, "latency_mpi: %s: got %llu, expected %llu\n", what, static_cast<unsigned long long>(got),
               static_cast<unsigned long long>(expected));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// Seconds per one-way message in the median chunk of one repetition.
double pingpong(int me) {
  std::vector<double> laps;
  std::uint64_t out = 0, in = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double last = MPI_Wtime();
  for (std::uint64_t i = 0; i < std::uint64_t{kChunks} * kRoundTripsPerChunk; ++i) {
    if (me == 0) {
      out = 2 * i;
      MPI_Send(&out, sizeof out, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&in, sizeof in, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      expect(in, 2 * i + 1, "ping-pong");
      if ((i + 1) % kRoundTripsPerChunk == 0) {
        const double now = MPI_Wtime();
        laps.push_back((now - last) / kRoundTripsPerChunk / 2);
        last = now;
      }
    } else {
      MPI_Recv(&in, sizeof in, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      expect(in, 2 * i, "ping-pong");
      out = 2 * i + 1;
      MPI_Send(&out, sizeof out, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return me == 0 ? switchyard::median(laps) : 0;
}

// Seconds per message of a burst in the median chunk of one repetition.
// Message k of burst b carries b * 64 + k, the ack b.
double burst(int me) {
  std::vector<double> laps;
  std::array<std::uint64_t, kBurstMessages> values{};
  std::array<MPI_Request, kBurstMessages> requests{};
  std::uint64_t ack = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double last = MPI_Wtime();
  for (std::uint64_t b = 0; b < std::uint64_t{kChunks} * kBurstsPerChunk; ++b) {
    if (me == 0) {
      for (int k = 0; k < kBurstMessages; ++k) {
        values[k] = b * kBurstMessages + k;
        MPI_Isend(&values[k], sizeof values[k], MPI_BYTE, 1, 0, MPI_COMM_WORLD, &requests[k]);
      }
      MPI_Waitall(kBurstMessages, requests.data(), MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, sizeof ack, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      expect(ack, b, "burst ack");
      if ((b + 1) % kBurstsPerChunk == 0) {
        const double now = MPI_Wtime();
        laps.push_back((now - last) / kBurstsPerChunk / kBurstMessages);
        last = now;
      }
    } else {
      for (int k = 0; k < kBurstMessages; ++k) {
        MPI_Irecv(&values[k], sizeof values[k], MPI_BYTE, 0, 0, MPI_COMM_WORLD, &requests[k]);
      }
      MPI_Waitall(kBurstMessages, requests.data(), MPI_STATUSES_IGNORE);
      for (int k = 0; k < kBurstMessages; ++k) expect(values[k], b * kBurstMessages + k, "burst");
      ack = b;
      MPI_Send(&ack, sizeof ack, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  return me == 0 ? switchyard::median(laps) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string mode = argc > 1 ? argv[1] : "";
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 0;
  if (size != 2 || (mode != "pingpong" && mode != "burst") || repetitions < 1) {
    if (me == 0) {
      std::fprintf(stderr,
                   "latency_mpi: needs 2 ranks, a mode (pingpong or burst) and a positive repetition count\n"
                   "usage: mpirun -np 2 --bind-to core --map-by core latency_mpi pingpong|burst REPETITIONS\n");
    }
    MPI_Finalize();
    return 2;
  }
  double (*run)(int) = mode == "pingpong" ? pingpong : burst;
  run(me);  // warm-up: connections, first touches
  std::vector<double> figures;
  for (int r = 0; r < repetitions; ++r) figures.push_back(run(me));
  if (me == 0) {
    std::printf("{\"mode\": \"%s\", \"median_us\": %.6f}\n", mode.c_str(), switchyard::median(figures) * 1e6);
  }
  MPI_Finalize();
  return 0;
}
