// The structured-grid halo (GridHalo) on bench_stencil's 2-D Jacobi, beside
// its plain-MPI twin, and its exchange alone beside a plain ExchangePlan.
//
//   BM_GridStencil/processes:P/strips:S   512 x 512 doubles, the sweep of
//                      examples/stencil_grid_kernel.hpp (the same arithmetic as
//                      stencil_kernel.hpp's), P blocks on a process grid chosen
//                      like MPI_Dims_create (strips:0; 2: 2 x 1, strips as MPI's
//                      ranks; 8: 4 x 2; 32: 8 x 4) or P x 1 strips of whole rows
//                      (strips:1), placed in blocks on the two cores.
//                      Every iteration: GridHalo::forward (faces, one ghost
//                      layer), sweep. Time = one iteration (rank 0's median
//                      chunk of a batch of kIterations); after each batch every
//                      process checks its points bit for bit against the
//                      sequential sweeps. mpi_us: stencil_mpi (MPI_Irecv,
//                      MPI_Isend, MPI_Waitall, 2 ranks bound to the two cores),
//                      one run of kBatches repetitions per repetition of the
//                      line, before its batches; x_mpi = Time / mpi_us,
//                      ips_x_mpi = mpi_us / Time (iterations per second against
//                      MPI's: >= 1 is at least MPI's).
//   BM_GridStencilSplit/processes:P/strips:S   the same stencil in the split
//                      phase (examples/stencil.cpp's default): every iteration
//                      GridHalo::start_forward, the sweep of the points that
//                      read no ghost, wait_forward, the sweep of the block's
//                      outer ring; checked and timed as BM_GridStencil, with
//                      its own run of stencil_mpi before its batches (the
//                      same counters).
//   BM_GridHaloForward/processes:P/strips:S   the exchange alone:
//                      GridHalo::forward on the same grid (straight from array
//                      to array), and in the
//                      same batch the same messages through a plain
//                      ExchangePlan from contiguous buffers (nothing to pack:
//                      the floor a halo that packs by hand would still pay its
//                      packing on top of). Time = one forward; plan_us = one
//                      plain run; x_plan = Time / plan_us.
//
// Where stencil_mpi or mpirun was not found at build time the stencil lines
// have no mpi_us; where its run failed, mpi_failed = 1 (why on stderr).

#include <switchyard/halo/grid_halo.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "stencil_grid_kernel.hpp"
#include "stencil_mpi_twin.hpp"

using namespace switchyard;

namespace {

constexpr int kIterations = 200;  // per batch: kChunks chunks of 10
constexpr int kExchanges = 400;  // per batch and form in the exchange lines

const std::vector<double>& reference() { return stencil::reference<kIterations>(); }

// strips: P x 1 blocks of whole rows (as stencil_mpi's ranks), else a
// process grid chosen like MPI_Dims_create.
halo::GridHalo<double> grid_halo(Rank processes, bool strips) {
  halo::GridShape shape;
  shape.dims = 2;
  shape.extents = {stencil::kN, stencil::kN};
  if (strips) shape.processes = {processes, 1};
  return halo::GridHalo<double>(shape, processes);
}

// Neighbouring blocks together, as MPI's launchers place ranks.
RunOptions in_blocks() {
  RunOptions options = sybench::default_placement();
  options.placement = Placement::block();
  return options;
}

// Seconds per iteration of the stencil on `processes` processes (rank 0's median chunk).
double stencil_iteration(const halo::GridHalo<double>& h, bool split) {
  sybench::ChunkTimer timer(kIterations / sybench::kChunks);
  std::vector<std::uint64_t> wrong(h.processes());
  sybench::runtime().run(
      h.processes(),
      [&](Process& p) -> Task<void> {
        stencil_grid::JacobiBlock block(h.block(p.rank()), stencil::kN, stencil::initial);
        co_await p.barrier();
        if (p.rank() == 0) timer.start();
        for (int k = 0; k < kIterations; ++k) {
          if (split) {  // inline, as a user writes it: no frame of a helper's per iteration
            h.start_forward(p, block.current());
            block.sweep_interior();
            co_await h.wait_forward(p);
            block.sweep_boundary();
          } else {
            co_await h.forward(p, block.current());
            block.sweep();
          }
          if (p.rank() == 0 && (k + 1) % (kIterations / sybench::kChunks) == 0) timer.lap();
        }
        wrong[p.rank()] = block.wrong_points(reference());
      },
      in_blocks());
  for (Rank r = 0; r < wrong.size(); ++r) {
    if (wrong[r] != 0) {
      throw std::runtime_error("grid stencil: " + std::to_string(wrong[r]) + " points of rank " + std::to_string(r) +
                               " differ from the sequential sweeps");
    }
  }
  return timer.per_op();
}

// A stencil line: its own run of the MPI twin, then its batches.
void grid_stencil_line(benchmark::State& state, bool split) {
  const auto processes = static_cast<Rank>(state.range(0));
  const std::optional<double> mpi_us = stencil::mpi_iteration_us(kIterations, "bench_grid_halo");
  double figures = 0;
  try {
    const halo::GridHalo<double> h = grid_halo(processes, state.range(1) != 0);
    for (auto _ : state) {
      const double f = stencil_iteration(h, split);
      state.SetIterationTime(f);
      figures += f;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double figure_us = figures / static_cast<double>(state.iterations()) * 1e6;
  state.counters["iterations_per_s"] = 1e6 / figure_us;
  if (mpi_us) {
    state.counters["mpi_us"] = *mpi_us;
    state.counters["x_mpi"] = figure_us / *mpi_us;
    state.counters["ips_x_mpi"] = *mpi_us / figure_us;
  } else if (stencil::kMpiProgram) {
    state.counters["mpi_failed"] = 1;
  }
}

void BM_GridStencil(benchmark::State& state) { grid_stencil_line(state, false); }
void BM_GridStencilSplit(benchmark::State& state) { grid_stencil_line(state, true); }

// Seconds per exchange (rank 0's median chunk) of `exchange(p)`, run
// kExchanges times by every process; `check(p)` after the batch.
template <class Make>
double exchange_time(Rank processes, Make make) {
  sybench::ChunkTimer timer(kExchanges / sybench::kChunks);
  sybench::runtime().run(
      processes,
      [&](Process& p) -> Task<void> {
        auto exchange = make(p);
        co_await exchange();  // the first run compiles the plan's programs
        co_await p.barrier();
        if (p.rank() == 0) timer.start();
        for (int k = 0; k < kExchanges; ++k) {
          co_await exchange();
          if (p.rank() == 0 && (k + 1) % (kExchanges / sybench::kChunks) == 0) timer.lap();
        }
      },
      in_blocks());
  return timer.per_op();
}

// The forward plan's messages as a plain plan, from and into contiguous buffers.
schedulers::CommMatrix messages_of(const schedulers::ExchangePlan& plan) {
  schedulers::CommMatrix m(plan.processes());
  for (Rank r = 0; r < plan.processes(); ++r) {
    for (const schedulers::MatrixEntry& e : plan.sends(r)) m.set(r, e.peer, e.bytes);
  }
  return m;
}

// A process's buffers for a plain plan: one per message each way.
struct PlainBuffers {
  PlainBuffers(const schedulers::ExchangePlan& plan, Rank r) {
    for (const auto& e : plan.sends(r)) out.emplace_back(e.bytes, std::byte{1});
    for (const auto& e : plan.receives(r)) in.emplace_back(e.bytes);
    for (const auto& b : out) send.emplace_back(b);
    for (auto& b : in) recv.emplace_back(b);
  }
  std::vector<std::vector<std::byte>> out, in;
  std::vector<std::span<const std::byte>> send;
  std::vector<std::span<std::byte>> recv;
};

void BM_GridHaloForward(benchmark::State& state) {
  const auto processes = static_cast<Rank>(state.range(0));
  double figures = 0, plains = 0;
  try {
    const halo::GridHalo<double> h = grid_halo(processes, state.range(1) != 0);
    const schedulers::ExchangePlan plain(messages_of(h.forward_plan()));
    for (auto _ : state) {
      const double f = exchange_time(processes, [&](Process& p) {
        return [&h, &p, a = std::vector<double>(h.local_elements(p.rank()), 1.0)]() mutable {
          return h.forward(p, std::span(a));
        };
      });
      plains += exchange_time(processes, [&](Process& p) {
        return [&plain, &p, b = std::make_shared<PlainBuffers>(plain, p.rank())] {
          return [](const schedulers::ExchangePlan& pl, Process& pr, std::shared_ptr<PlainBuffers> buf) -> Task<void> {
            co_await pl.run(pr, buf->send, buf->recv);
          }(plain, p, b);
        };
      });
      state.SetIterationTime(f);
      figures += f;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  state.counters["plan_us"] = plains / static_cast<double>(state.iterations()) * 1e6;
  state.counters["x_plan"] = figures / plains;
}

// Both kinds of line: P = 2, 8 and 32 (8 and 32 also in strips), kBatches
// batches per repetition.
void grid_lines(benchmark::internal::Benchmark* b) {
  b->ArgNames({"processes", "strips"})->Args({2, 0})->Args({8, 0})->Args({8, 1})->Args({32, 0})->Args({32, 1});
  b->UseManualTime()->Iterations(sybench::kBatches);
  b->ReportAggregatesOnly(true)->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_GridStencil)->Apply(grid_lines);
BENCHMARK(BM_GridStencilSplit)->Apply(grid_lines);
BENCHMARK(BM_GridHaloForward)->Apply(grid_lines);

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(
      argc, argv,
      "grid halo: Time = us per iteration (stencil) or per forward (exchange) of a 512 x 512 grid on 2 cores");
}
