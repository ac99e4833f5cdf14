// A 2-D 5-point Jacobi stencil on the structured-grid halo: an n x n grid cut
// into blocks on a process grid chosen like MPI_Dims_create, one block per
// process, each block's ghost layer (faces: the 5-point stencil needs no
// corners) filled straight from the neighbours' arrays. By default in the
// split phase: every iteration starts the exchange (GridHalo::start_forward),
// sweeps the points that read no ghost while the neighbours copy, waits
// (wait_forward) and sweeps the block's outer ring; --whole exchanges first
// (GridHalo::forward), then sweeps. The result is checked bit for bit against
// the same sweeps on one thread, and the time per iteration reported.
//
//   stencil [--n N] [--processes P] [--iterations K] [--placement block|round-robin] [--whole]
//
// Defaults: 512 x 512 (bench/stencil_mpi's grid), 8 processes, 200 iterations.

#include <switchyard/halo/grid_halo.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/span_timer.hpp>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "stencil_grid_kernel.hpp"

namespace sy = switchyard;
namespace syh = switchyard::halo;

namespace {

struct Options {
  int n = 512;
  sy::Rank processes = 8;
  int iterations = 200;
  bool block_placement = true;
  bool split = true;  // start, interior sweep, wait, boundary sweep; --whole: exchange, then sweep
};

// The value of point (i, j) before the first sweep: a hot top edge over a
// deterministic field.
double initial(int i, int j) { return i == 0 ? 1.0 : static_cast<double>((i * 131 + j * 71) % 1000) / 1000.0; }

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--whole") {
      o.split = false;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--n") {
      o.n = std::stoi(value);
    } else if (arg == "--processes") {
      o.processes = static_cast<sy::Rank>(std::stoul(value));
    } else if (arg == "--iterations") {
      o.iterations = std::stoi(value);
    } else if (arg == "--placement" && (value == "block" || value == "round-robin")) {
      o.block_placement = value == "block";
    } else {
      return false;
    }
  }
  return o.n >= 3 && o.processes > 0 && o.iterations > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (!parse(argc, argv, o)) {
      std::fprintf(stderr,
                   "usage: stencil [--n N >= 3] [--processes P] [--iterations K] [--placement block|round-robin] "
                   "[--whole]\n");
      return 2;
    }
    syh::GridShape shape;
    shape.dims = 2;
    shape.extents = {static_cast<std::uint64_t>(o.n), static_cast<std::uint64_t>(o.n)};
    const syh::GridHalo<double> halo(shape, o.processes);  // InvalidArgument for a grid too small
    const std::vector<double> expected = stencil_grid::sequential(o.n, o.iterations, initial);

    sy::Runtime rt;
    sy::RunOptions run;
    run.placement = o.block_placement ? sy::Placement::block() : sy::Placement::round_robin();
    sy::SpanTimer timer(rt, 1);
    std::atomic<std::uint64_t> wrong{0};
    rt.run(
        o.processes,
        [&](sy::Process& p) -> sy::Task<void> {
          stencil_grid::JacobiBlock block(halo.block(p.rank()), o.n, initial);
          co_await p.barrier();
          timer.start(0, p);
          for (int k = 0; k < o.iterations; ++k) {
            if (o.split) {
              halo.start_forward(p, block.current());
              block.sweep_interior();  // reads no ghost, writes only the next values
              co_await halo.wait_forward(p);
              block.sweep_boundary();
            } else {
              co_await halo.forward(p, block.current());
              block.sweep();
            }
          }
          timer.end(0, p);
          wrong += block.wrong_points(expected);
        },
        run);
    const auto& grid = halo.shape().processes;
    std::printf(
        "stencil: %d x %d, %u processes (%u x %u), %d iterations (%s): %.2f us per iteration, %llu wrong points "
        "against the sequential sweeps\n",
        o.n, o.n, o.processes, grid[0], grid[1], o.iterations, o.split ? "split phase" : "whole exchanges",
        timer.milliseconds(rt)[0] * 1000.0 / o.iterations, static_cast<unsigned long long>(wrong.load()));
    return wrong.load() == 0 ? 0 : 1;
  } catch (const sy::InvalidArgument& e) {
    std::fprintf(stderr, "stencil: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stencil: %s\n", e.what());
    return 1;
  }
}
