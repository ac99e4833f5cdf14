// A distributed sparse matrix-vector product y = A x, repeated as an
// iterative method repeats it (x <- s A x, K times, s keeping x its size), on
// switchyard's halo exchange: the matrix's rows in contiguous blocks, one
// block per process, each process's x entries exchanged with
// HaloExchange::forward before every product. --split runs the split phase
// instead: every iteration starts the exchange (HaloExchange::start_forward),
// computes the rows that read no ghost while the neighbours copy, waits
// (wait_forward) and computes the rest; it pays where blocks have rows enough to hide the exchange
// (docs/benchmarks.md, "The sparse product"). The result is checked against
// the same iterations done sequentially, bit for bit, and the time per
// iteration reported.
//
//   spmv MATRIX.mtx [--blocks P] [--iterations K] [--scheduler NAME] [--split]
//                   [--placement block|round-robin] [--kernel function|inline] [--realtime P]
//
// Placement: `block` (the default) puts neighbouring blocks on one core, so
// that most of the halo stays on its core; `round-robin` spreads them (the
// runtime's default). docs/benchmarks.md, "The sparse product", has both measured.
// --kernel inline (without --split) writes the product inside the process's coroutine instead
// of calling a function; docs/embedding.md, "Compute inside a process", says why the
// function is faster. --realtime P runs the workers under SCHED_FIFO at
// priority P (docs/embedding.md, "Tails"). Run under mpirun, the blocks span the MPI ranks.

#include <switchyard/halo/halo_exchange.hpp>
#include <switchyard/runtime.hpp>
#include <switchyard/span_timer.hpp>

#include "spmv_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace sy = switchyard;
namespace syh = switchyard::halo;

namespace {

struct Options {
  std::string matrix;
  sy::Rank blocks = 16;
  std::uint32_t iterations = 200;
  std::string scheduler = "optimal";
  bool block_placement = true;
  bool inline_kernel = false;
  bool split = false;
  int realtime_priority = 0;
};

// Runs the iterations on rt; returns the wrong entries of this node's
// processes and stores the time per iteration (the slowest node's) in us_per_iteration.
std::uint64_t distributed(sy::Runtime& rt, const syh::CsrMatrix<double>& a, const Options& o, double scale,
                          const std::vector<double>& expected, double& us_per_iteration) {
  namespace sys = switchyard::schedulers;
  sys::ExchangePlanOptions plan;
  plan.scheduler = o.scheduler;
  const syh::HaloExchange<double> halo(a, syh::RowPartition::blocks(a.rows, o.blocks), plan);
  sy::RunOptions run;
  run.placement = o.block_placement ? sy::Placement::block() : sy::Placement::round_robin();
  sy::SpanTimer timer(rt, 1);
  std::atomic<std::uint64_t> wrong{0};
  rt.run(
      o.blocks,
      [&](sy::Process& p) -> sy::Task<void> {
        const sy::Rank me = p.rank();
        const syh::HaloMap& map = halo.map(me);
        const syh::CsrMatrix<double> local = halo.local_rows(a, me);
        const std::size_t n = map.owned.size();
        const spmv::RowSplit rows = o.split ? spmv::split_rows(local, n) : spmv::RowSplit{};
        std::vector<double> x(map.local_size()), y(n);  // x: owned entries, then ghosts
        for (std::size_t i = 0; i < n; ++i) x[i] = spmv::x0(map.owned[i]);
        const std::span<const double> owned = std::span<const double>(x).first(n);
        const std::span<double> ghosts = std::span(x).subspan(n);
        co_await p.barrier();
        timer.start(0, p);
        for (std::uint32_t it = 0; it < o.iterations; ++it) {
          if (o.split) {
            halo.start_forward(p, owned, ghosts);
            spmv::multiply_rows(local, rows.interior, x.data(), scale, y.data());  // reads no ghost
            co_await halo.wait_forward(p);
            spmv::multiply_rows(local, rows.boundary, x.data(), scale, y.data());
          } else {
            co_await halo.forward(p, owned, ghosts);
            if (o.inline_kernel) {
              for (std::uint64_t i = 0; i < local.rows; ++i) {
                double sum = 0;
#pragma GCC unroll 4  // as spmv::row_times
                for (std::uint64_t k = local.row_start[i]; k < local.row_start[i + 1]; ++k) {
                  sum += local.value[k] * x[local.column[k]];
                }
                y[i] = sum * scale;
              }
            } else {
              spmv::multiply(local, x.data(), scale, y.data());
            }
          }
          std::copy(y.begin(), y.end(), x.begin());
        }
        timer.end(0, p);
        for (std::size_t i = 0; i < n; ++i) wrong += x[i] != expected[map.owned[i]];
      },
      run);
  us_per_iteration = timer.milliseconds(rt)[0] * 1000.0 / o.iterations;
  return wrong.load();
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--blocks" && has_value) {
      o.blocks = static_cast<sy::Rank>(std::stoul(argv[++i]));
    } else if (arg == "--iterations" && has_value) {
      o.iterations = static_cast<std::uint32_t>(std::stoul(argv[++i]));
    } else if (arg == "--scheduler" && has_value) {
      o.scheduler = argv[++i];
    } else if (arg == "--placement" && has_value) {
      const std::string p = argv[++i];
      if (p != "block" && p != "round-robin") return false;
      o.block_placement = p == "block";
    } else if (arg == "--kernel" && has_value) {
      const std::string k = argv[++i];
      if (k != "function" && k != "inline") return false;
      o.inline_kernel = k == "inline";
    } else if (arg == "--split") {
      o.split = true;
    } else if (arg == "--realtime" && has_value) {
      o.realtime_priority = std::stoi(argv[++i]);
    } else if (o.matrix.empty() && arg[0] != '-') {
      o.matrix = arg;
    } else {
      return false;
    }
  }
  // The inline kernel is the whole product's (docs/embedding.md compares it with the function).
  return !o.matrix.empty() && o.blocks > 0 && o.iterations > 0 && !(o.inline_kernel && o.split);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    bool parsed = false;
    try {
      parsed = parse(argc, argv, o);
    } catch (const std::exception&) {  // a number that is none (std::stoul)
    }
    if (!parsed) {
      std::fprintf(stderr,
                   "usage: spmv MATRIX.mtx [--blocks P] [--iterations K] [--scheduler NAME] [--split] "
                   "[--placement block|round-robin] [--kernel function|inline] [--realtime P] (P and K positive; "
                   "--kernel inline without --split)\n");
      return 2;
    }
    const auto a = syh::read_csr_matrix_market_file<double>(o.matrix);
    if (spmv::blocks_beyond_rows("spmv", o.blocks, o.matrix.c_str(), a)) return 2;
    const double scale = spmv::steady_scale(a, o.iterations);
    double sequential_us = 0;
    const std::vector<double> expected = spmv::sequential(a, scale, o.iterations, sequential_us);
    sy::Runtime rt(sy::RuntimeOptions{.realtime_priority = o.realtime_priority});
    double us = 0;
    const std::uint64_t wrong = distributed(rt, a, o, scale, expected, us);
    const std::uint64_t all_wrong =
        static_cast<std::uint64_t>(rt.sum_over_nodes(std::vector<std::int64_t>{static_cast<std::int64_t>(wrong)})[0]);
    if (rt.node() == 0) {
      std::printf(
          "spmv: %s, %llu x %llu, %llu entries, %u blocks on %u node(s) x %zu core(s), %s placement, %s, %s, "
          "%u iterations: %.2f us per iteration; %llu wrong entries against the sequential product, which took "
          "%.2f us per iteration on one thread; %zu of x's entries end subnormal or not finite\n",
          o.matrix.c_str(), static_cast<unsigned long long>(a.rows), static_cast<unsigned long long>(a.columns),
          static_cast<unsigned long long>(a.nonzeros()), o.blocks, rt.nodes(), rt.cores().size(),
          o.block_placement ? "block" : "round-robin", o.scheduler.c_str(), o.split ? "split phase" : "whole",
          o.iterations, us, static_cast<unsigned long long>(all_wrong), sequential_us,
          spmv::abnormal_entries(expected));
    }
    return all_wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmv: %s\n", e.what());
    return 1;
  }
}
