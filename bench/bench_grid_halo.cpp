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
//                      MPI's: >= 1 is at least MPI's). limit_us: the compute
//                      limit, the sequential sweep of the whole grid on one
//                      pinned thread / 2 (a perfect split on the two cores, no
//                      halo), in the same batch; x_limit = Time / limit_us;
//                      mpi_x_limit = mpi_us / limit_us (where MPI's twin
//                      stands against the same limit: ips_x_mpi can reach T
//                      only where x_limit reaches mpi_x_limit / T).
//   BM_GridStencilSplit/processes:P/strips:S   the same stencil in the split
//                      phase (examples/stencil.cpp's default): every iteration
//                      GridHalo::start_forward, the sweep of the points that
//                      read no ghost, wait_forward, the sweep of the block's
//                      outer ring; checked and timed as BM_GridStencil, with
//                      its own run of stencil_mpi before its batches (the
//                      same counters).
//   BM_HaloStencil/processes:P, BM_HaloStencilSplit/processes:P   the same
//                      stencil on the sparse halo (HaloExchange<double>, the
//                      grid's points as a vector cut into P strips of whole
//                      rows, the 5-point pattern its matrix, the dense sweep
//                      of stencil_kernel.hpp over the strip and its two ghost
//                      rows): forward, then the sweep; or start_forward, the
//                      rows that read no ghost, wait_forward, the strip's
//                      first and last rows. Checked and timed as
//                      BM_GridStencil, with the same counters.
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
#include <switchyard/halo/halo_exchange.hpp>

#include <array>
#include <cstring>
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

// Throws where some rank's points differ from the sequential sweeps.
void check_right(const char* what, const std::vector<std::uint64_t>& wrong) {
  for (Rank r = 0; r < wrong.size(); ++r) {
    if (wrong[r] != 0) {
      throw std::runtime_error(std::string(what) + ": " + std::to_string(wrong[r]) + " points of rank " +
                               std::to_string(r) + " differ from the sequential sweeps");
    }
  }
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
  check_right("grid stencil", wrong);
  return timer.per_op();
}

// The 5-point pattern of the grid's points (row-major): each inner point's
// four neighbours, ascending (up, left, right, down); the fixed boundary's
// points none.
struct StencilPattern {
  StencilPattern() {
    const std::uint64_t n = stencil::kN;
    for (std::uint64_t i = 0; i < n; ++i) {
      for (std::uint64_t j = 0; j < n; ++j) {
        if (i > 0 && i + 1 < n && j > 0 && j + 1 < n) {
          for (const std::uint64_t g : {(i - 1) * n + j, i * n + j - 1, i * n + j + 1, (i + 1) * n + j})
            column.push_back(static_cast<halo::ColumnIndex>(g));
        }
        row_start.push_back(column.size());
      }
    }
  }
  halo::SparsityPattern pattern() const { return {row_start.size() - 1, row_start.size() - 1, row_start, column}; }
  std::vector<std::uint64_t> row_start{0};
  std::vector<halo::ColumnIndex> column;
};

// A process's strip of whole rows on the sparse halo, swept with the dense
// kernel of stencil_kernel.hpp: its rows (owned, row-major) twice (sweep_arrays.hpp), the
// sweep's input and output, and its ghosts, which stay in one buffer: the
// upper neighbour's row (points 1 to kN - 2) then the lower's, as the map
// orders them (owners ascending), one padding element before them so that
// ghost row point j is at index j.
class DenseStrip {
 public:
  explicit DenseStrip(const halo::HaloMap& m) : arrays_(m.owned.size(), stencil::kN), ghost_(m.ghosts.size() + 1) {
    const std::uint64_t n = stencil::kN;
    if (m.owned.empty() || m.owned.size() % n != 0 || m.owned.front() % n != 0)
      throw std::runtime_error("sparse halo stencil: a block that is not whole rows");
    first_ = static_cast<int>(m.owned.front() / n);
    rows_ = static_cast<int>(m.owned.size() / n);
    const bool above = first_ > 0, below = first_ + rows_ < stencil::kN;
    for (std::size_t k = 0; k < m.ghosts.size(); ++k) {  // the layout this class assumes, checked once
      const bool upper = above && k < n - 2;
      const std::uint64_t row = upper ? first_ - 1 : first_ + rows_, j = (upper ? k : k - (above ? n - 2 : 0)) + 1;
      if (m.ghosts[k] != row * n + j) throw std::runtime_error("sparse halo stencil: unexpected ghosts");
    }
    if (m.ghosts.size() != (n - 2) * (above + below)) throw std::runtime_error("sparse halo stencil: ghost count");
    up_ = above ? ghost_.data() : nullptr;
    down_ = below ? ghost_.data() + (above ? n - 2 : 0) : nullptr;
    for (int r = 0; r < rows_; ++r) {
      for (int j = 0; j < stencil::kN; ++j) arrays_.current()[r * n + j] = stencil::initial(first_ + r, j);
    }
    arrays_.copy_current_to_next();
  }
  std::span<double> owned() noexcept { return arrays_.current(); }
  std::span<double> ghosts() noexcept { return std::span(ghost_).subspan(1); }
  // The rows that read no ghost, then (once the ghosts are in) the first and
  // last, and the next values are current.
  void sweep_interior() noexcept {
    for (int r = 1; r + 1 < rows_; ++r) sweep_row(r);
  }
  void sweep_boundary() noexcept {
    sweep_row(0);
    if (rows_ > 1) sweep_row(rows_ - 1);
    arrays_.swap();
  }
  // Owned points that differ from the whole grid `grid` in any bit.
  std::uint64_t wrong_points(const std::vector<double>& grid) const noexcept {
    const double* theirs = grid.data() + static_cast<std::size_t>(first_) * stencil::kN;
    std::uint64_t wrong = 0;
    const std::span<const double> mine = arrays_.current();
    for (std::size_t k = 0; k < mine.size(); ++k) wrong += std::memcmp(&mine[k], theirs + k, sizeof(double)) != 0;
    return wrong;
  }

 private:
  void sweep_row(int r) noexcept {
    const int i = first_ + r;
    if (i == 0 || i == stencil::kN - 1) return;
    const std::size_t n = stencil::kN;
    const double* mid = arrays_.current().data() + r * n;
    const double* up = r > 0 ? mid - n : up_;
    const double* down = r + 1 < rows_ ? mid + n : down_;
    double* out = arrays_.next().data() + r * n;
    for (int j = 1; j < stencil::kN - 1; ++j) out[j] = 0.25 * ((up[j] + down[j]) + (mid[j - 1] + mid[j + 1]));
  }
  int first_ = 0, rows_ = 0;
  stencil_layout::SweepArrays arrays_;  // the rows, row-major, twice
  std::vector<double> ghost_;
  const double* up_ = nullptr;  // ghost row point j at up_[j]
  const double* down_ = nullptr;
};

// Seconds per iteration of the stencil on the sparse halo (rank 0's median chunk).
double halo_stencil_iteration(const halo::HaloExchange<double>& h, bool split) {
  sybench::ChunkTimer timer(kIterations / sybench::kChunks);
  std::vector<std::uint64_t> wrong(h.processes());
  sybench::runtime().run(
      h.processes(),
      [&](Process& p) -> Task<void> {
        DenseStrip x(h.map(p.rank()));
        co_await p.barrier();
        if (p.rank() == 0) timer.start();
        for (int k = 0; k < kIterations; ++k) {
          if (split) {
            h.start_forward(p, x.owned(), x.ghosts());
            x.sweep_interior();
            co_await h.wait_forward(p);
          } else {
            co_await h.forward(p, x.owned(), x.ghosts());
            x.sweep_interior();
          }
          x.sweep_boundary();
          if (p.rank() == 0 && (k + 1) % (kIterations / sybench::kChunks) == 0) timer.lap();
        }
        wrong[p.rank()] = x.wrong_points(reference());
      },
      in_blocks());
  check_right("sparse halo stencil", wrong);
  return timer.per_op();
}

// A stencil line: its own run of the MPI twin, then its batches, each the
// compute limit and then `iteration()`.
template <class Iteration>
void stencil_line(benchmark::State& state, Iteration iteration) {
  const std::optional<double> mpi_us = stencil::mpi_iteration_us(kIterations, "bench_grid_halo");
  double figures = 0, limits = 0;
  try {
    for (auto _ : state) {
      limits += stencil::half_sequential_iteration<kIterations>();
      const double f = iteration();
      state.SetIterationTime(f);
      figures += f;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  const double n = static_cast<double>(state.iterations());
  const double figure_us = figures / n * 1e6, limit_us = limits / n * 1e6;
  state.counters["iterations_per_s"] = 1e6 / figure_us;
  state.counters["limit_us"] = limit_us;
  state.counters["x_limit"] = figures / limits;
  if (mpi_us) {
    state.counters["mpi_us"] = *mpi_us;
    state.counters["x_mpi"] = figure_us / *mpi_us;
    state.counters["ips_x_mpi"] = *mpi_us / figure_us;
    state.counters["mpi_x_limit"] = *mpi_us / limit_us;
  } else if (stencil::kMpiProgram) {
    state.counters["mpi_failed"] = 1;
  }
}

void grid_stencil_line(benchmark::State& state, bool split) {
  const halo::GridHalo<double> h = grid_halo(static_cast<Rank>(state.range(0)), state.range(1) != 0);
  stencil_line(state, [&] { return stencil_iteration(h, split); });
}
void BM_GridStencil(benchmark::State& state) { grid_stencil_line(state, false); }
void BM_GridStencilSplit(benchmark::State& state) { grid_stencil_line(state, true); }

void halo_stencil_line(benchmark::State& state, bool split) {
  static const StencilPattern s;
  const halo::HaloExchange<double> h(
      s.pattern(), halo::RowPartition::blocks(s.row_start.size() - 1, static_cast<Rank>(state.range(0))));
  stencil_line(state, [&] { return halo_stencil_iteration(h, split); });
}
void BM_HaloStencil(benchmark::State& state) { halo_stencil_line(state, false); }
void BM_HaloStencilSplit(benchmark::State& state) { halo_stencil_line(state, true); }

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
// The sparse halo's stencil lines: P = 2, 8 and 32 strips.
void halo_lines(benchmark::internal::Benchmark* b) {
  b->ArgNames({"processes"})->Arg(2)->Arg(8)->Arg(32);
  b->UseManualTime()->Iterations(sybench::kBatches);
  b->ReportAggregatesOnly(true)->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_HaloStencil)->Apply(halo_lines);
BENCHMARK(BM_HaloStencilSplit)->Apply(halo_lines);
BENCHMARK(BM_GridHaloForward)->Apply(grid_lines);

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(
      argc, argv,
      "grid halo: Time = us per iteration (stencil) or per forward (exchange) of a 512 x 512 grid on 2 cores");
}
