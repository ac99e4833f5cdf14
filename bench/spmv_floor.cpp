// The process floor of examples/spmv: the same product, iterations and check
// with no runtime. Two threads pinned to cores 0 and 1; each block of rows
// (halo_maps()'s, as both twins') is a bare coroutine (bare_process.hpp) on
// the thread of its core in the example's block placement (the first half of
// the blocks on core 0). Each block keeps two x (owned entries, then ghosts),
// for even and odd iterations, so that nothing waits for readers. Per
// iteration a thread waits until the other's flag says that it has packed its
// entries for this iteration, then resumes each of its processes once: the
// process copies its ghosts, from its own core's blocks' x or from the other
// thread's packed entries, multiplies into its next x and suspends. Then the
// thread packs the entries the other thread's blocks read next into a half of
// an area of its own (by parity), every entry in whole lines, and stores its
// flag (release). One crossing each way, and the entries cross packed in
// lines: what any program of these blocks on two cores pays every product.
//
//   bench/spmv_floor MATRIX.mtx [--blocks P] [--iterations K]
//
// P even (default 2). Prints the time per iteration and the wrong entries
// against the sequential product, in the twins' words.

#include <switchyard/halo/halo_exchange.hpp>

#include "bare_process.hpp"
#include "bench_common.hpp"
#include "spmv_kernel.hpp"

#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

namespace syh = switchyard::halo;
using switchyard::Rank;

// One value's copy: a ghost's from a neighbour's x or a packed entry, or an
// entry's into its thread's area.
struct ValueCopy {
  const double* from;
  double* into;
};

struct alignas(64) Line {
  double entries[8];
};

// One block: its rows, its x of even and odd iterations (whole lines of its
// own: a line shared with a block of the other core would cross every
// iteration), and per parity the copies of its ghosts.
struct Block {
  syh::CsrMatrix<double> local;
  std::vector<Line> lines[2];
  std::vector<ValueCopy> ghosts[2];
  double* x(int parity) { return lines[parity].front().entries; }
};

// One thread's: its flag (the iteration its packed entries are for, plus one)
// on a line of its own, its area (two halves, whole lines each) and, per
// parity, the copies that pack its blocks' entries into the half of that parity.
struct alignas(64) Side {
  std::atomic<std::uint64_t> packed_for{0};
  alignas(64) std::vector<Line> area;
  std::vector<ValueCopy> pack[2];
};

int thread_of(Rank block, Rank count) { return block < count / 2 ? 0 : 1; }

// The blocks, x0 in both of each one's x, and every copy: an entry another
// core's block reads goes through its thread's area, in the order of its
// senders' `sent` lists; other ghosts read their neighbour's x.
std::vector<Block> lay_out(const syh::CsrMatrix<double>& a, const syh::HaloExchange<double>& halo, Rank count,
                           Side (&sides)[2]) {
  std::vector<Block> blocks(count);
  for (Rank b = 0; b < count; ++b) {
    const syh::HaloMap& m = halo.map(b);
    blocks[b].local = halo.local_rows(a, b);
    for (int parity = 0; parity < 2; ++parity) {
      blocks[b].lines[parity].assign((m.local_size() + 7) / 8, Line{});
      for (std::size_t i = 0; i < m.owned.size(); ++i) blocks[b].x(parity)[i] = spmv::x0(m.owned[i]);
    }
  }
  std::map<std::pair<Rank, Rank>, std::size_t> slot_of;  // (sender, receiver) across cores: first slot
  std::size_t slots[2] = {0, 0};
  for (Rank b = 0; b < count; ++b) {
    const syh::HaloMap& m = halo.map(b);
    for (std::size_t d = 0; d < m.destinations.size(); ++d) {
      if (thread_of(m.destinations[d], count) == thread_of(b, count)) continue;
      slot_of[{b, m.destinations[d]}] = slots[thread_of(b, count)];
      slots[thread_of(b, count)] += m.destination_start[d + 1] - m.destination_start[d];
    }
  }
  for (int t = 0; t < 2; ++t) sides[t].area.assign(2 * std::max<std::size_t>(1, (slots[t] + 7) / 8), Line{});
  const auto at = [&](int t, int parity, std::size_t slot) {
    return &sides[t].area[parity * sides[t].area.size() / 2].entries[0] + slot;
  };
  for (Rank b = 0; b < count; ++b) {
    const syh::HaloMap& m = halo.map(b);
    const int t = thread_of(b, count);
    for (std::size_t s = 0; s < m.sources.size(); ++s) {
      const Rank from = m.sources[s];
      const syh::HaloMap& fm = halo.map(from);
      const auto d = std::find(fm.destinations.begin(), fm.destinations.end(), b) - fm.destinations.begin();
      for (std::size_t k = 0; k < m.source_start[s + 1] - m.source_start[s]; ++k) {
        const std::size_t entry = fm.sent[fm.destination_start[d] + k];
        for (int parity = 0; parity < 2; ++parity) {
          double* const ghost = &blocks[b].x(parity)[m.owned.size() + m.source_start[s] + k];
          if (thread_of(from, count) == t) {
            blocks[b].ghosts[parity].push_back({&blocks[from].x(parity)[entry], ghost});
          } else {
            double* const packed = at(1 - t, parity, slot_of[{from, b}] + k);
            sides[1 - t].pack[parity].push_back({&blocks[from].x(parity)[entry], packed});
            blocks[b].ghosts[parity].push_back({packed, ghost});
          }
        }
      }
    }
  }
  return blocks;
}

void copy_values(const std::vector<ValueCopy>& copies) noexcept {
  for (const ValueCopy& c : copies) *c.into = *c.from;
}

// A block's process: on its iteration's resume it copies its ghosts,
// multiplies into its next x and suspends.
sybench::BareProcess block_process(Block& b, double scale) {
  for (std::uint64_t it = 0;; ++it) {
    const int now = static_cast<int>(it & 1);
    copy_values(b.ghosts[now]);
    spmv::multiply(b.local, b.x(now), scale, b.x(1 - now));
    co_await std::suspend_always{};
  }
}

// One thread's iterations over its blocks; returns their seconds.
double iterate(std::vector<Block>& blocks, Rank count, int t, Side& mine, const Side& other, double scale,
               std::uint32_t iterations) {
  std::vector<sybench::BareProcess> processes;  // frames made on the thread that resumes them
  for (Rank b = 0; b < count; ++b) {
    if (thread_of(b, count) == t) processes.push_back(block_process(blocks[b], scale));
  }
  copy_values(mine.pack[0]);
  mine.packed_for.store(1, std::memory_order_release);
  const auto start = sybench::Clock::now();
  for (std::uint64_t it = 0; it < iterations; ++it) {
    // Acquire: pairs with the other's release below. It packed this
    // iteration's entries, and read the half that this iteration packs last
    // time, before it packed those.
    sybench::spin_until([&] { return other.packed_for.load(std::memory_order_acquire) > it; });
    // The other thread has read the half this iteration packs: its lines are
    // asked for now, to be this core's by the time the packing stores reach them.
    const std::size_t half = mine.area.size() / 2;
    for (std::size_t l = 0; l < half; ++l) __builtin_prefetch(&mine.area[((it + 1) & 1) * half + l], 1);
    for (const sybench::BareProcess& p : processes) p.resume();
    copy_values(mine.pack[(it + 1) & 1]);
    mine.packed_for.store(it + 2, std::memory_order_release);
  }
  return sybench::seconds_between(start, sybench::Clock::now());
}

bool parse(int argc, char** argv, switchyard::Rank& blocks, std::uint32_t& iterations) {
  if (argc < 2 || argc % 2 != 0) return false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string arg = argv[i], value = argv[i + 1];
    if (value.empty() || value.size() >= 10 || value.find_first_not_of("0123456789") != std::string::npos) return false;
    const auto number = static_cast<std::uint32_t>(std::stoul(value));
    if (arg == "--blocks") {
      blocks = number;
    } else if (arg == "--iterations") {
      iterations = number;
    } else {
      return false;
    }
  }
  return blocks >= 2 && blocks % 2 == 0 && iterations > 0;
}

}  // namespace

int main(int argc, char** argv) {
  switchyard::Rank count = 2;
  std::uint32_t iterations = 200;
  if (!parse(argc, argv, count, iterations)) {
    std::fprintf(stderr, "usage: spmv_floor MATRIX.mtx [--blocks P] [--iterations K] (P even, K > 0)\n");
    return 2;
  }
  try {
    const auto a = syh::read_csr_matrix_market_file<double>(argv[1]);
    if (spmv::blocks_beyond_rows("spmv_floor", count, argv[1], a)) return 2;
    const syh::HaloExchange<double> halo(a, syh::RowPartition::blocks(a.rows, count));
    const double scale = spmv::steady_scale(a, iterations);
    double sequential_us = 0;
    const std::vector<double> expected = spmv::sequential(a, scale, iterations, sequential_us);
    Side sides[2];
    std::vector<Block> blocks = lay_out(a, halo, count, sides);
    double seconds[2] = {0, 0};
    sybench::run_pinned_pair(
        sybench::kCoreA, [&] { seconds[0] = iterate(blocks, count, 0, sides[0], sides[1], scale, iterations); },
        sybench::kCoreB, [&] { seconds[1] = iterate(blocks, count, 1, sides[1], sides[0], scale, iterations); });
    std::uint64_t wrong = 0;
    for (switchyard::Rank b = 0; b < count; ++b) {
      const syh::HaloMap& m = halo.map(b);
      for (std::size_t i = 0; i < m.owned.size(); ++i)
        wrong += blocks[b].x(static_cast<int>(iterations & 1))[i] != expected[m.owned[i]];
    }
    std::printf(
        "spmv_floor: %s, %u blocks on 2 pinned threads, %u iterations: %.2f us per iteration; %llu wrong entries "
        "against the sequential product, which took %.2f us per iteration on one thread; %zu of x's entries end "
        "subnormal or not finite\n",
        argv[1], count, iterations, std::max(seconds[0], seconds[1]) * 1e6 / iterations,
        static_cast<unsigned long long>(wrong), sequential_us, spmv::abnormal_entries(expected));
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmv_floor: %s\n", e.what());
    return 1;
  }
}
