// Compute inside a process (a user's kernel, written inside the coroutine, ran
// slower than the same loops in a function): the same sparse kernel, one block
// of lund_a's rows (73 of them, 1223 entries), written three ways:
//  * BM_KernelInCoroutine: the loops inside the process's coroutine, as a
//    user first writes them, a co_await after each product (as a solver's
//    halo exchange would be);
//  * BM_KernelFunctionFromCoroutine: the same coroutine calling an ordinary
//    function for the product;
//  * BM_KernelFunction: the function on a plain thread, the floor.
// GCC (12) keeps every local variable of a coroutine in its frame, a heap
// object it reaches through a pointer: the loops' sum, indices and bounds are
// loaded and stored through it on every step instead of living in registers.
// The kernel is examples/spmv_kernel.hpp's. docs/embedding.md, "Compute inside a
// process", has the figures.

#include <benchmark/benchmark.h>

#include <switchyard/halo/halo_exchange.hpp>
#include <switchyard/runtime.hpp>

#include <vector>

#include "spmv_kernel.hpp"

namespace {

namespace sy = switchyard;
namespace syh = switchyard::halo;

struct Kernel {
  syh::CsrMatrix<double> local;  // rank 1's rows of lund_a in 2 blocks, local columns
  std::vector<double> x;
  Kernel() {
    const auto a = syh::read_csr_matrix_market_file<double>(SWITCHYARD_DATA_DIR "/lund_a.mtx");
    const syh::HaloExchange<double> halo(a, syh::RowPartition::blocks(a.rows, 2));
    local = halo.local_rows(a, 1);
    x.assign(local.columns, 0.5);
  }
};

const Kernel& kernel() {
  static const Kernel k;
  return k;
}

void BM_KernelInCoroutine(benchmark::State& state) {
  const Kernel& kn = kernel();
  sy::Runtime rt;
  rt.run(1, [&](sy::Process& p) -> sy::Task<void> {
    const syh::CsrMatrix<double>& a = kn.local;
    std::vector<double> y(a.rows);
    for (auto _ : state) {
      for (std::uint64_t i = 0; i < a.rows; ++i) {
        double sum = 0;
#pragma GCC unroll 4  // as spmv::row_times: the same loop both ways
        for (std::uint64_t k = a.row_start[i]; k < a.row_start[i + 1]; ++k) sum += a.value[k] * kn.x[a.column[k]];
        y[i] = sum * 0.5;
      }
      benchmark::DoNotOptimize(y.data());
      co_await p.yield();
    }
  });
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kn.local.nonzeros()));
}

void BM_KernelFunctionFromCoroutine(benchmark::State& state) {
  const Kernel& kn = kernel();
  sy::Runtime rt;
  rt.run(1, [&](sy::Process& p) -> sy::Task<void> {
    std::vector<double> y(kn.local.rows);
    for (auto _ : state) {
      spmv::multiply(kn.local, kn.x.data(), 0.5, y.data());
      benchmark::DoNotOptimize(y.data());
      co_await p.yield();
    }
  });
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kn.local.nonzeros()));
}

void BM_KernelFunction(benchmark::State& state) {
  const Kernel& kn = kernel();
  std::vector<double> y(kn.local.rows);
  for (auto _ : state) {
    spmv::multiply(kn.local, kn.x.data(), 0.5, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kn.local.nonzeros()));
}

BENCHMARK(BM_KernelInCoroutine);
BENCHMARK(BM_KernelFunctionFromCoroutine);
BENCHMARK(BM_KernelFunction);

}  // namespace

BENCHMARK_MAIN();
