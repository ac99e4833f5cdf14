// Single-copy bandwidth between cores, against std::memcpy.
//
//   BM_Memcpy/bytes:N                     std::memcpy of N bytes on a std::thread pinned
//                                         to core 1, source and destination warm in the
//                                         same way as in the switchyard run (same
//                                         buffers, one untimed copy first). Time = one copy.
//   BM_SingleCopy/bytes:N/inflight:D      rank 0 on core 0 sends N bytes to rank 1 on
//                                         core 1, which recv_into's a preallocated buffer;
//                                         the sender reuses one buffer and keeps D sends
//                                         in flight (post_send; D = 1 is plain send).
//                                         Messages above the eager limit (1 KiB) are
//                                         single-copy: rank 1's core memcpy's straight out
//                                         of rank 0's buffer. Time = one message.
//                                         Counters: GiBps (the figure), memcpy_GiBps
//                                         (measured in the same batch), x_memcpy =
//                                         GiBps / memcpy_GiBps, target_x = 0.8 (the
//                                         target from 64 KiB up).
//
// Correctness: see single_copy.hpp.

#include <cstdint>
#include <string>

#include "single_copy.hpp"

using namespace switchyard;
using sybench::kCoreA;
using sybench::kCoreB;

namespace {

constexpr double kTargetRatio = 0.8;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

void BM_Memcpy(benchmark::State& state, std::size_t skew) {
  sybench::CopyBuffers buf(static_cast<std::size_t>(state.range(0)), skew);
  const int per_chunk = sybench::per_chunk_for(buf.size);
  try {
    for (auto _ : state) state.SetIterationTime(sybench::memcpy_time(buf, per_chunk, kCoreB));
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_SingleCopy(benchmark::State& state, std::size_t skew) {
  sybench::CopyBuffers buf(static_cast<std::size_t>(state.range(0)), skew);
  const int per_chunk = sybench::per_chunk_for(buf.size);
  const int in_flight = static_cast<int>(state.range(1));
  double figure = 0, limit = 0;
  try {
    for (auto _ : state) {
      const double copy = sybench::memcpy_time(buf, per_chunk, kCoreB);
      const double message =
          sybench::single_copy_time(sybench::runtime(), buf, per_chunk, in_flight, sybench::placed({kCoreA, kCoreB}));
      state.SetIterationTime(message);
      figure += message;
      limit += copy;
    }
  } catch (const std::exception& e) {
    return sybench::fail(state, e);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  const double n = static_cast<double>(state.iterations());
  const double gibps = static_cast<double>(buf.size) / (figure / n) / kGiB;
  const double memcpy_gibps = static_cast<double>(buf.size) / (limit / n) / kGiB;
  state.counters["GiBps"] = gibps;
  state.counters["memcpy_GiBps"] = memcpy_gibps;
  state.counters["x_memcpy"] = gibps / memcpy_gibps;
  state.counters["target_x"] = kTargetRatio;
}

void common(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(sybench::kBatches)->ReportAggregatesOnly(true)->Unit(benchmark::kMicrosecond);
}

constexpr std::int64_t kSizes[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};

// Registered size by size, so that each memcpy line stands right above its switchyard lines.
const bool registered = [] {
  for (auto s : kSizes) {
    auto* m = benchmark::RegisterBenchmark("BM_Memcpy", BM_Memcpy, std::size_t{0});
    common(m);
    m->ArgName("bytes")->Arg(s);
    auto* c = benchmark::RegisterBenchmark("BM_SingleCopy", BM_SingleCopy, std::size_t{0});
    common(c);
    c->ArgNames({"bytes", "inflight"});
    for (std::int64_t d : {1, 2}) c->Args({s, d});
  }
  // The rep movsb pathology: the receiver's buffer 16 bytes past a page boundary.
  auto* m = benchmark::RegisterBenchmark("BM_Memcpy_Skew16", BM_Memcpy, std::size_t{16});
  common(m);
  m->ArgName("bytes")->Arg(64 << 10);
  auto* c = benchmark::RegisterBenchmark("BM_SingleCopy_Skew16", BM_SingleCopy, std::size_t{16});
  common(c);
  c->ArgNames({"bytes", "inflight"})->Args({64 << 10, 2});
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  return sybench::main(argc, argv, "bandwidth: Time = us per message (per memcpy); bytes_per_second per message");
}
