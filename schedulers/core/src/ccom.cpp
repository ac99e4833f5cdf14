#include "switchyard/schedulers/ccom.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <random>
#include <string>

#include "scheduler_support.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::schedulers {

namespace {

// Random_Swap of Fig. 5 on the copied row: a Fisher-Yates shuffle, applied to
// (dst, slot) pairs so that each destination keeps its message index. Each
// 64-bit output of the stream serves two 32-bit draws (Lemire's method on 32
// bits): the draws are most of the compaction's time.
void random_swap(std::uint32_t* dst, std::uint32_t* slot, std::uint32_t count, std::uint64_t stream) {
  detail::SplitMix64 rng(stream);
  std::uint64_t spare = 0;
  bool have_spare = false;
  auto next = [&]() -> std::uint32_t {
    if (have_spare) {
      have_spare = false;
      return static_cast<std::uint32_t>(spare >> 32);
    }
    spare = rng();
    have_spare = true;
    return static_cast<std::uint32_t>(spare);
  };
  for (std::uint32_t i = count; i > 1; --i) {
    std::uint64_t product = std::uint64_t{next()} * i;
    if (static_cast<std::uint32_t>(product) < i) {
      const std::uint32_t threshold = (0u - i) % i;
      while (static_cast<std::uint32_t>(product) < threshold) product = std::uint64_t{next()} * i;
    }
    const auto j = static_cast<std::uint32_t>(product >> 32);
    std::swap(dst[i - 1], dst[j]);
    std::swap(slot[i - 1], slot[j]);
  }
}

// Row i's stream: the i-th output of a mt19937_64 seeded from `seed` (mixed, so
// that it differs from the schedulers' own mt19937_64(seed)). Drawn up front, in
// row order, so that the row tasks may run in any order.
std::vector<std::uint64_t> row_streams(Rank n, std::uint64_t seed) {
  std::mt19937_64 rng(detail::mix(seed));
  std::vector<std::uint64_t> streams(n);
  for (auto& s : streams) s = rng();
  return streams;
}

// The entries are left uninitialised (see Entries): each row task writes its
// whole row, padding included, so there is no serial zero-fill before the
// parallel part.
CompactMatrix allocate(Rank n, std::uint32_t width) {
  CompactMatrix c;
  c.processes = n;
  c.width = width;
  c.dst.resize(std::size_t{n} * width);
  c.slot.resize(std::size_t{n} * width);
  c.length.resize(n);
  return c;
}

// A row is the unit of work, as a processor is in the paper, and its own random
// stream makes the result independent of how rows are grouped. TBB's
// auto_partitioner groups them into tasks: a sparse row of d = 64 takes less
// than a task costs (docs/benchmarks.md, "Figures behind the schedulers'
// comments"), and with one row per task (simple_partitioner, grain 1) the
// parallel build ran at 0.96x (n = 1024) and 1.15x (n = 4096) of the serial
// one, against 1.5x and 1.7x grouped.
template <class Body>
void for_each_row(Rank n, bool parallel, const Body& body) {
  if (parallel) {
    tbb::parallel_for(tbb::blocked_range<Rank>(0, n), [&](const tbb::blocked_range<Rank>& r) {
      for (Rank i = r.begin(); i != r.end(); ++i) body(i);
    });
  } else {
    for (Rank i = 0; i < n; ++i) body(i);
  }
}

}  // namespace

CompactMatrix compact(const CommMatrix& m, std::uint64_t seed, bool parallel) {
  const Rank n = m.size();
  std::uint32_t width = 0;
  for (Rank i = 0; i < n; ++i) width = std::max(width, static_cast<std::uint32_t>(m.row(i).size()));
  CompactMatrix c = allocate(n, width);
  const std::vector<std::uint64_t> streams = row_streams(n, seed);
  for_each_row(n, parallel, [&](Rank i) {
    const auto row = m.row(i);
    const auto count = static_cast<std::uint32_t>(row.size());
    std::uint32_t* dst = c.dst.data() + std::size_t{i} * width;
    std::uint32_t* slot = c.slot.data() + std::size_t{i} * width;
    for (std::uint32_t k = 0; k < count; ++k) {
      dst[k] = row[k].peer;
      slot[k] = k;
    }
    random_swap(dst, slot, count, streams[i]);
    std::fill(dst + count, dst + width, 0u);
    std::fill(slot + count, slot + width, 0u);
    c.length[i] = count;
  });
  return c;
}

CompactMatrix compact_dense(std::span<const std::uint8_t> com, Rank n, std::uint64_t seed, bool parallel) {
  if (com.size() != std::size_t{n} * n) {
    throw InvalidArgument("switchyard: compact_dense: " + std::to_string(com.size()) + " entries for a " +
                          std::to_string(n) + " x " + std::to_string(n) + " matrix");
  }
  // The width is the longest row: a first counting pass, as the paper's d is known in advance.
  std::vector<std::uint32_t> counts(n);
  for_each_row(n, parallel, [&](Rank i) {
    const std::uint8_t* row = com.data() + std::size_t{i} * n;
    counts[i] = static_cast<std::uint32_t>(n - static_cast<std::size_t>(std::count(row, row + n, std::uint8_t{0})));
  });
  const std::uint32_t width = n == 0 ? 0 : *std::max_element(counts.begin(), counts.end());
  CompactMatrix c = allocate(n, width);
  const std::vector<std::uint64_t> streams = row_streams(n, seed);
  for_each_row(n, parallel, [&](Rank i) {
    const std::uint8_t* row = com.data() + std::size_t{i} * n;
    std::uint32_t* dst = c.dst.data() + std::size_t{i} * width;
    std::uint32_t* slot = c.slot.data() + std::size_t{i} * width;
    std::uint32_t k = 0;
    for (Rank j = 0; j < n; ++j) {
      if (row[j] != 0) {
        dst[k] = j;
        slot[k] = k;
        ++k;
      }
    }
    random_swap(dst, slot, k, streams[i]);
    std::fill(dst + k, dst + width, 0u);
    std::fill(slot + k, slot + width, 0u);
    c.length[i] = k;
  });
  return c;
}

std::vector<std::uint8_t> dense_pattern(const CommMatrix& m) {
  const Rank n = m.size();
  std::vector<std::uint8_t> com(std::size_t{n} * n, 0);
  for (Rank i = 0; i < n; ++i) {
    for (const auto& e : m.row(i)) com[std::size_t{i} * n + e.peer] = 1;
  }
  return com;
}

}  // namespace switchyard::schedulers
