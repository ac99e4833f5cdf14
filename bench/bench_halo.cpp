// HaloExchange beside the same messages through its own ExchangePlan, in one
// job: what the halo adds to the plan's run (packing the values it sends; its
// runs go through a binding of the plan to its buffer and the caller's
// ghosts) against the plan's run on buffers packed beforehand.
//
//   BM_HaloForward/lund_a/blocks:P
//       y = A x's halo for lund_a (147 x 147, tests/data) in P row blocks, one
//       per process, round robin on cores 0 and 1, a double per ghost entry.
//       One batch is one job: kChunks chunks of forward() calls alternated
//       with kChunks chunks of the plan's run() on the same messages, each
//       chunk between barriers, timed by rank 0. Time = one forward() in the
//       median chunk (mean over the batches; halo_median_ns: their median);
//       plan_ns = one run() in its median chunk, median over the batches (the
//       limit); x_plan = halo_median_ns / plan_ns, target <= 1.1. Every ghost of every process
//       is checked after every chunk of either kind, against values that
//       change from chunk to chunk.
//   BM_HaloForwardVsBound/lund_a/blocks:P
//       The same, the plan's runs bound to the buffers (ExchangePlan::bind,
//       once per process and job): bound_ns and x_bound in place of plan_ns
//       and x_plan (no target).
//   BM_HaloSplitVsForward/lund_a/blocks:P
//       The split phase (start_forward, then at once wait_forward) in place
//       of forward(), alternated with chunks of forward() itself: forward_ns
//       and x_forward in place of plan_ns and x_plan (no target): what the
//       split phase costs where nothing is computed between its halves.
//   Each baseline is alternated with the halo in a job of its own: a chunk's
//   first run after the other kind's re-reads the regions, so each baseline
//   follows the halo's chunks alone.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <switchyard/halo/csr_matrix.hpp>
#include <switchyard/halo/halo_exchange.hpp>
#include <switchyard/halo/row_partition.hpp>

#include "bench_common.hpp"

namespace halo = switchyard::halo;
namespace sy = switchyard;

namespace {

constexpr int kCallsPerChunk = 50;
constexpr double kTargetXPlan = 1.1;

// The value of global entry g in chunk c: a different one in every chunk.
double value(halo::GlobalIndex g, int chunk) { return static_cast<double>(g) + 1e6 * chunk; }

// One process's buffers for both kinds of call.
struct ProcessBuffers {
  std::vector<double> owned, ghosts, packed;
  std::vector<std::span<const std::byte>> packed_out;
  std::vector<std::span<std::byte>> ghosts_in;
};

ProcessBuffers buffers_for(const halo::HaloMap& m) {
  ProcessBuffers b;
  b.owned.resize(m.owned.size());
  b.ghosts.resize(m.ghosts.size());
  b.packed.resize(m.sent.size());
  for (std::size_t d = 0; d < m.destinations.size(); ++d) {
    const std::span<const double> part(b.packed.data() + m.destination_start[d],
                                       m.destination_start[d + 1] - m.destination_start[d]);
    b.packed_out.push_back(std::as_bytes(part));
  }
  for (std::size_t s = 0; s < m.sources.size(); ++s) {
    const std::span<double> part(b.ghosts.data() + m.source_start[s], m.source_start[s + 1] - m.source_start[s]);
    b.ghosts_in.push_back(std::as_writable_bytes(part));
  }
  return b;
}

// This chunk's owned values, and what the plan's line sends of them.
void set_owned(const halo::HaloMap& m, ProcessBuffers& b, int chunk) {
  for (std::size_t i = 0; i < m.owned.size(); ++i) b.owned[i] = value(m.owned[i], chunk);
  for (std::size_t k = 0; k < m.sent.size(); ++k) b.packed[k] = b.owned[m.sent[k]];
}

// What the halo's chunks alternate with (see the file's description).
enum class Baseline { plan, bound, forward };

// The number of ghosts that do not hold this chunk's value of their entry.
std::uint64_t wrong_ghosts(const halo::HaloMap& m, const ProcessBuffers& b, int chunk) {
  std::uint64_t wrong = 0;
  for (std::size_t k = 0; k < m.ghosts.size(); ++k) wrong += b.ghosts[k] != value(m.ghosts[k], chunk) ? 1 : 0;
  return wrong;
}

void BM_HaloForward(benchmark::State& state, sy::Rank blocks, Baseline baseline) {
  const auto a = halo::read_csr_matrix_market_file<double>(SWITCHYARD_HALO_MATRIX);
  const halo::HaloExchange<double> h(a, halo::RowPartition::blocks(a.rows, blocks));
  const sy::schedulers::ExchangePlan& plan = h.forward_plan();
  std::vector<ProcessBuffers> buffers;
  for (sy::Rank r = 0; r < blocks; ++r) buffers.push_back(buffers_for(h.map(r)));
  std::vector<double> halo_seconds, plan_seconds;  // per call, per batch
  std::uint64_t wrong = 0;
  try {
    for (auto _ : state) {
      sybench::ChunkTimer halo_timer(kCallsPerChunk), plan_timer(kCallsPerChunk);
      std::atomic<std::uint64_t> batch_wrong{0};
      sybench::runtime().run(
          blocks,
          [&](sy::Process& p) -> sy::Task<void> {
            const halo::HaloMap& m = h.map(p.rank());
            ProcessBuffers& b = buffers[p.rank()];
            sy::schedulers::BoundExchange bound;
            if (baseline == Baseline::bound) bound = plan.bind(p, b.packed_out, b.ghosts_in);
            for (int chunk = 0; chunk < 2 * sybench::kChunks; ++chunk) {
              const bool through_halo = chunk % 2 == 0;
              sybench::ChunkTimer& timer = through_halo ? halo_timer : plan_timer;
              set_owned(m, b, chunk);
              co_await p.barrier();
              if (p.rank() == 0) timer.start();
              for (int call = 0; call < kCallsPerChunk; ++call) {
                if (through_halo && baseline == Baseline::forward) {
                  h.start_forward(p, b.owned, b.ghosts);
                  co_await h.wait_forward(p);
                } else if (through_halo || baseline == Baseline::forward) {
                  co_await h.forward(p, b.owned, b.ghosts);
                } else if (baseline == Baseline::bound) {
                  co_await bound.run();
                } else {
                  co_await plan.run(p, b.packed_out, b.ghosts_in);
                }
              }
              co_await p.barrier();
              if (p.rank() == 0) timer.lap();
              batch_wrong += wrong_ghosts(m, b, chunk);
            }
          },
          sybench::round_robin());
      halo_seconds.push_back(halo_timer.per_op());
      plan_seconds.push_back(plan_timer.per_op());
      state.SetIterationTime(halo_seconds.back());
      wrong += batch_wrong.load();
    }
    if (wrong != 0) throw std::runtime_error("bench_halo: " + std::to_string(wrong) + " wrong ghost(s)");
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  // The batches' medians: the Time column is their mean.
  const double halo_median = sy::median(halo_seconds), plan_median = sy::median(plan_seconds);
  state.counters["halo_median_ns"] = halo_median * 1e9;
  const std::string name = baseline == Baseline::plan ? "plan" : baseline == Baseline::bound ? "bound" : "forward";
  state.counters[name + "_ns"] = plan_median * 1e9;
  state.counters["x_" + name] = plan_median > 0 ? halo_median / plan_median : 0;
  if (baseline == Baseline::plan) state.counters["target_x_plan"] = kTargetXPlan;
  std::uint64_t messages = 0;
  for (sy::Rank r = 0; r < blocks; ++r) messages += h.map(r).sources.size();
  state.counters["messages"] = static_cast<double>(messages);
}

const bool registered = [] {
  for (const auto& [baseline, prefix] :
       {std::pair{Baseline::plan, "BM_HaloForward"}, std::pair{Baseline::bound, "BM_HaloForwardVsBound"},
        std::pair{Baseline::forward, "BM_HaloSplitVsForward"}}) {
    for (const sy::Rank blocks : {16u, 64u, 147u}) {
      const std::string line = std::string(prefix) + "/lund_a/blocks:" + std::to_string(blocks);
      benchmark::RegisterBenchmark(line.c_str(), BM_HaloForward, blocks, baseline)
          ->UseManualTime()
          ->Iterations(sybench::kBatches)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) { return sybench::main(argc, argv, "bench_halo"); }
