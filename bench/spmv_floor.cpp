// The floor of examples/spmv at one block per core: the same product,
// iterations and check with no runtime at all. Two threads pinned to cores
// 0 and 1 each own one block of rows (halo_maps()'s, as both twins); per
// iteration each packs the x entries the other reads into a half of an area
// of its own (the iteration's parity picks the half), stores the iteration on
// a flag line of its own (release), spins until the other's flag says the
// same (acquire), copies the other's half into its ghosts, multiplies and
// copies y to x. What the hardware asks of any program that moves this
// halo between two cores every product: one crossing each way.
//
//   bench/spmv_floor MATRIX.mtx [--iterations K]
//
// prints the time per iteration (the slower thread's) and the wrong entries
// against the sequential product, in the twins' words.

#include <switchyard/halo/halo_exchange.hpp>

#include "bench_common.hpp"
#include "spmv_kernel.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace syh = switchyard::halo;

// What one thread writes and the other reads: its flag, on a line of its
// own, and its area, two halves of the packed entries, each whole lines.
struct alignas(64) Line {
  double entries[8];
};
struct alignas(64) Side {
  std::atomic<std::uint64_t> iteration{0};
  alignas(64) std::vector<Line> area;
  std::size_t half = 0;  // lines per half
  double* half_of(std::uint64_t it) { return area[(it & 1) * half].entries; }
  const double* half_of(std::uint64_t it) const { return area[(it & 1) * half].entries; }
};

struct Block {
  double seconds = 0;
  std::uint64_t wrong = 0;
};

// One thread's iterations on block `me`; `mine` and `other` are the two sides.
Block iterate(const syh::CsrMatrix<double>& a, const syh::HaloExchange<double>& halo, double scale,
              const std::vector<double>& expected, std::uint32_t k, switchyard::Rank me, Side& mine, const Side& other) {
  const syh::HaloMap& m = halo.map(me);
  const syh::CsrMatrix<double> local = halo.local_rows(a, me);
  const std::size_t n = m.owned.size(), ghosts = m.local_size() - n;
  std::vector<double> x(m.local_size()), y(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = spmv::x0(m.owned[i]);
  const auto start = sybench::Clock::now();
  for (std::uint64_t it = 1; it <= k; ++it) {
    // The other thread read this half two iterations ago, before it stored
    // the flag of the last one, which this thread has seen.
    double* const packed = mine.half_of(it);
    for (std::size_t e = 0; e < m.sent.size(); ++e) packed[e] = x[m.sent[e]];
    mine.iteration.store(it, std::memory_order_release);  // pairs with the other's acquire below
    sybench::spin_until([&] { return other.iteration.load(std::memory_order_acquire) >= it; });
    // Two blocks: the other is the one source, its entries in the ghosts' order.
    std::memcpy(x.data() + n, other.half_of(it), ghosts * sizeof(double));
    spmv::multiply(local, x.data(), scale, y.data());
    std::copy(y.begin(), y.end(), x.begin());
  }
  Block b{sybench::seconds_between(start, sybench::Clock::now()), 0};
  for (std::size_t i = 0; i < n; ++i) b.wrong += x[i] != expected[m.owned[i]];
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t iterations = 200;
  bool parsed = argc == 2 || argc == 4;
  if (argc == 4) {
    const std::string arg = argv[2], value = argv[3];
    parsed = arg == "--iterations" && !value.empty() && value.size() < 10 &&
             value.find_first_not_of("0123456789") == std::string::npos && std::stoul(value) > 0;
    if (parsed) iterations = static_cast<std::uint32_t>(std::stoul(value));
  }
  if (!parsed) {
    std::fprintf(stderr, "usage: spmv_floor MATRIX.mtx [--iterations K] (K > 0)\n");
    return 2;
  }
  try {
    const auto a = syh::read_csr_matrix_market_file<double>(argv[1]);
    const syh::HaloExchange<double> halo(a, syh::RowPartition::blocks(a.rows, 2));
    const double scale = spmv::steady_scale(a, iterations);
    double sequential_us = 0;
    const std::vector<double> expected = spmv::sequential(a, scale, iterations, sequential_us);
    Side sides[2];
    for (switchyard::Rank b = 0; b < 2; ++b) {
      sides[b].half = std::max<std::size_t>(1, (halo.map(b).sent.size() + 7) / 8);
      sides[b].area.assign(2 * sides[b].half, Line{});
    }
    Block blocks[2];
    sybench::run_pinned_pair(
        sybench::kCoreA, [&] { blocks[0] = iterate(a, halo, scale, expected, iterations, 0, sides[0], sides[1]); },
        sybench::kCoreB, [&] { blocks[1] = iterate(a, halo, scale, expected, iterations, 1, sides[1], sides[0]); });
    const std::uint64_t wrong = blocks[0].wrong + blocks[1].wrong;
    std::printf(
        "spmv_floor: %s, 2 pinned threads (one block each), %u iterations: %.2f us per iteration; %llu wrong "
        "entries against the sequential product, which took %.2f us per iteration on one thread; %zu of x's "
        "entries end subnormal or not finite\n",
        argv[1], iterations, std::max(blocks[0].seconds, blocks[1].seconds) * 1e6 / iterations,
        static_cast<unsigned long long>(wrong), sequential_us, spmv::abnormal_entries(expected));
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmv_floor: %s\n", e.what());
    return 1;
  }
}
