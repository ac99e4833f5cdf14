#pragma once
// Google Benchmark under mpirun: every MPI rank (a *node* of the switchyard
// job) runs the same program, the same lines in the same order, each line's
// batches in lock step, and node 0 alone prints.
//
// Why it needs care. Google Benchmark picks iteration counts adaptively, per
// process; two nodes that disagree on how many batches a line runs leave one
// of them waiting forever in a collective (MPI's or switchyard's) the other
// never enters. Here:
//   * every line runs a fixed number of batches (mpi_line(): kBatches
//     iterations, manual time), and the repetitions and filter come from the
//     command line, which mpirun gives every node alike;
//   * every batch goes through agreed(): each node measures what it can see
//     (seconds per operation, 0 where it timed nothing), and every node leaves
//     the batch with the maximum over the nodes (MPI_Allreduce), so all of them
//     hand Google Benchmark the same manual time and compute the same line;
//   * an error on one node (a wrong byte, a switchyard error) becomes an error
//     on every node in the same batch, so all skip the line together instead of
//     one waiting for the others;
//   * nodes other than 0 report to a reporter that prints nothing and never
//     write --benchmark_out; the exit status is the same on every node.
//
// The switchyard side of a line runs on node_runtime(): the Runtime of this
// node, on the cores this MPI rank may use (`mpirun --bind-to core` gives each
// node one core of this machine), constructed after MPI_Init_thread with
// MPI_THREAD_MULTIPLE, so switchyard uses this MPI and leaves finalizing it to
// main(), and destroyed before MPI_Finalize.

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"

namespace sybench::mpi {

// This MPI rank's index in MPI_COMM_WORLD (its node index) and their number.
inline int node() {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  return me;
}
inline int nodes() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

inline std::unique_ptr<switchyard::Runtime>& runtime_slot() {
  static std::unique_ptr<switchyard::Runtime> rt;
  return rt;
}
// The Runtime of this node (main() creates it).
inline switchyard::Runtime& node_runtime() { return *runtime_slot(); }

// One batch on every node: `measure` returns this node's k figures (seconds
// per operation, 0 where this node timed nothing; any values whose maximum
// over the nodes means something), and every node gets back each figure's
// maximum over the nodes. If `measure` threw on any node, this throws on every
// node (this node's message, or which node failed), so all leave the line in
// the same batch.
template <class Measure>
std::vector<double> agreed_values(std::size_t k, Measure&& measure) {
  std::vector<double> v(k + 1, 0.0);  // the figures, then the number of the first failed node + 1
  std::string error;
  try {
    const auto mine = measure();
    if (mine.size() != k) throw std::logic_error("agreed_values: measure returned a wrong count of figures");
    std::copy(mine.begin(), mine.end(), v.begin());
  } catch (const std::exception& e) {
    error = e.what();
    v.assign(k + 1, 0.0);
    v[k] = node() + 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (v[k] != 0) {
    throw std::runtime_error(error.empty() ? "node " + std::to_string(static_cast<int>(v[k]) - 1) + " failed" : error);
  }
  v.pop_back();
  return v;
}
template <std::size_t K, class Measure>
std::array<double, K> agreed(Measure&& measure) {
  const std::vector<double> v = agreed_values(K, std::forward<Measure>(measure));
  std::array<double, K> out{};
  std::copy(v.begin(), v.end(), out.begin());
  return out;
}

// A line's settings on every node: fixed batches, the manual time agreed().
inline void mpi_line(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(kBatches)->Unit(benchmark::kMicrosecond);
}

// What nodes other than 0 report to.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// main() of a benchmark program under mpirun (or alone: one node).
inline int main(int argc, char** argv, const char* what) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int me = node();
  if (provided < MPI_THREAD_MULTIPLE) {
    if (me == 0) std::fprintf(stderr, "this MPI does not provide MPI_THREAD_MULTIPLE (only level %d)\n", provided);
    MPI_Finalize();
    return 1;
  }
  int status = 1;
  if (initialize(argc, argv, what, me == 0)) {
    benchmark::AddCustomContext("mpi_nodes", std::to_string(nodes()));
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string library(version, static_cast<std::size_t>(length));
    benchmark::AddCustomContext("mpi_library", library.substr(0, library.find_first_of(",\n")));
    runtime_slot() = std::make_unique<switchyard::Runtime>();
    add_worker_context(node_runtime(), node_runtime().cores().size() * static_cast<std::size_t>(nodes()),
                       default_placement(), "node0_worker");
    SilentReporter silent;
    const std::size_t ran = me == 0 ? benchmark::RunSpecifiedBenchmarks() : benchmark::RunSpecifiedBenchmarks(&silent);
    benchmark::Shutdown();
    int failed = any_failure.load() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    status = exit_status(ran, failed != 0);
    runtime_slot().reset();
  }
  MPI_Finalize();
  return status;
}

}  // namespace sybench::mpi
